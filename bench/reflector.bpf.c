// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/reflector.bpf.c - the hand-written baseline of sPIN's streaming
 * ping-pong: one XDP program that turns every sPIN ping into its pong in
 * place and sends it back with XDP_TX, with no runtime, no match list, no
 * message state and no tail calls.
 *
 * The pong is what the streaming ping-pong handler's put from device sends:
 * each ping packet becomes its own single-packet message back to the
 * sender, match bits 10, a fresh message id, flags |= SPIN_F_FROM_DEVICE.
 *
 * Configuration (read-only data, set before load or left at the defaults):
 *   spin_port  UDP port of sPIN traffic, host order (SPIN_DEFAULT_PORT)
 *   my_rank    rank written as src_rank of the pong (1)
 *   my_pid     Portals pid written as src_pid of the pong (0)
 *
 * Not sPIN (not IPv4/UDP to spin_port, IP options, fragments) -> XDP_PASS;
 * sPIN with a bad version/op or inconsistent lengths -> XDP_DROP.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <spin/wire.h>

#define ETH_P_IP_BE	bpf_htons(0x0800)
#define PONG_MATCH_BITS	10
#define ETH_ALEN	6

volatile const __u16 spin_port = SPIN_DEFAULT_PORT;
volatile const __u32 my_rank = 1;
volatile const __u32 my_pid = 0;

/* message ids of the pongs; shared by all CPUs */
__u32 next_msg_id = 1;

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static __always_inline void ipv4_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
	int i;

	ip->check = 0;
#pragma unroll
	for (i = 0; i < (int)sizeof(*ip) / 2; i++)
		sum += w[i];
	ip->check = csum_fold(sum);
}

SEC("xdp")
int xdp_reflector(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct udphdr *udp = (void *)(ip + 1);
	struct spin_hdr *sh = (void *)(udp + 1);
	__u8 mac[ETH_ALEN];
	__u32 addr, pay, id;
	__u16 ulen;

	if ((void *)(sh + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != ETH_P_IP_BE || ip->ihl != 5 || ip->version != 4 ||
	    ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	if (udp->dest != bpf_htons(spin_port))
		return XDP_PASS;

	/* a sPIN packet from here on: bad ones are dropped */
	ulen = bpf_ntohs(udp->len);
	if (ulen < sizeof(*udp) + sizeof(*sh) ||
	    (void *)udp + ulen > data_end ||
	    bpf_ntohs(ip->tot_len) != sizeof(*ip) + ulen)
		return XDP_DROP;
	if (sh->version != SPIN_VERSION || sh->op != SPIN_OP_PUT)
		return XDP_DROP;
	pay = ulen - sizeof(*udp) - sizeof(*sh);

	/* Ethernet: back to the sender */
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);

	/* IPv4: swap the addresses, fresh TTL and checksum */
	addr = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = addr;
	ip->ttl = 64;
	ip->id = 0;
	ipv4_csum(ip);

	/* UDP: from the sPIN port to the sender's port, no checksum */
	udp->dest = udp->source;
	udp->source = bpf_htons(spin_port);
	udp->check = 0;

	/* sPIN: a new single-packet message from us to the sender */
	id = __sync_fetch_and_add(&next_msg_id, 1);
	if (!id)
		id = __sync_fetch_and_add(&next_msg_id, 1);
	/* job_key: the ping's, the same job */
	sh->src_rank = bpf_htonl(my_rank);
	sh->src_pid = bpf_htonl(my_pid);
	sh->msg_id = bpf_htonl(id);
	sh->match_bits = bpf_cpu_to_be64(PONG_MATCH_BITS);
	sh->msg_len = bpf_htonl(pay);
	sh->pkt_off = 0;
	sh->seg_size = bpf_htons(pay > SPIN_MAX_SEG ? pay : SPIN_MAX_SEG);
	sh->remote_off = 0;
	sh->hdr_data = 0;
	sh->user_hdr[0] = 0;
	sh->user_hdr[1] = 0;
	sh->user_hdr[2] = 0;
	sh->user_hdr[3] = 0;
	sh->flags |= bpf_htons(SPIN_F_FROM_DEVICE);
	return XDP_TX;
}

char _license[] SEC("license") = "Dual BSD/GPL";
