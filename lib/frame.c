// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Whole sPIN frames: Ethernet + IPv4 (no options) + UDP + sPIN header. */
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <spin/spin.h>

static uint16_t ip_csum(const void *p, size_t len)
{
	const uint16_t *w = p;
	uint32_t sum = 0;

	for (; len > 1; len -= 2)
		sum += *w++;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

int spin_frame_build(void *buf, size_t cap, const struct spin_frame_addr *a,
		     const struct spin_hdr *h, const void *payload, uint32_t len)
{
	size_t total = SPIN_PAY_OFF + (size_t)len;
	struct ethhdr *eth = buf;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);

	if (total > cap || total - sizeof(*eth) > 0xffff)
		return -1;
	memcpy(eth->h_dest, a->dst_mac, 6);
	memcpy(eth->h_source, a->src_mac, 6);
	eth->h_proto = htons(ETH_P_IP);
	memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons((uint16_t)(total - sizeof(*eth)));
	ip->frag_off = htons(0x4000);	/* DF */
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = a->src_ip;
	ip->daddr = a->dst_ip;
	ip->check = ip_csum(ip, sizeof(*ip));
	udp->source = htons(a->sport);
	udp->dest = htons(a->dport);
	udp->len = htons((uint16_t)(total - sizeof(*eth) - sizeof(*ip)));
	udp->check = 0;
	memcpy((char *)buf + SPIN_HDR_OFF, h, sizeof(*h));
	if (len)
		memcpy((char *)buf + SPIN_PAY_OFF, payload, len);
	return (int)total;
}
