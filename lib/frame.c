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

/* One's-complement sum of len bytes (network order), not folded. */
static uint64_t sum16(const uint8_t *p, size_t len, uint64_t sum)
{
	uint32_t w;

	for (; len >= 4; len -= 4, p += 4) {
		memcpy(&w, p, 4);
		sum += w;
	}
	if (len) {	/* zero-padded, as the checksum pads an odd length */
		w = 0;
		memcpy(&w, p, len);
		sum += w;
	}
	return sum;
}

int spin_frame_csum(void *frame, size_t flen)
{
	uint8_t *f = frame;
	struct iphdr *ip = (void *)(f + sizeof(struct ethhdr));
	struct udphdr *udp = (void *)(ip + 1);
	size_t ulen;
	uint64_t sum;

	if (flen < SPIN_HDR_OFF || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return -1;
	ulen = ntohs(udp->len);
	if (ulen < sizeof(*udp) || SPIN_HDR_OFF - sizeof(*udp) + ulen > flen)
		return -1;
	udp->check = 0;
	sum = (uint64_t)ip->saddr + ip->daddr + htons(IPPROTO_UDP) + udp->len;
	sum = sum16((const uint8_t *)udp, ulen, sum);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	udp->check = (uint16_t)~sum ? (uint16_t)~sum : 0xffff;
	return 0;
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
