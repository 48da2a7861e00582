/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Handler memory of the hostile handlers rt_auth, rt_cfg and rt_peers
 * (unit/handler_rt_maps): what they saw and what they wrote. */
#ifndef SPIN_RT_REACH_H
#define SPIN_RT_REACH_H

#define RT_REACH_RANK	0x6bad		/* written as spin_cfg.my_rank, proc_rank[] */
#define RT_REACH_PEER	2		/* the peer rank rt_peers rewrites */
#define RT_REACH_IP	0x0d0c0b0a	/* ... with this address */

struct rt_reach {
	__u64 calls;
	__u64 k0, k1;		/* rt_auth: spin_auth's key */
	__u64 on;		/* ... and whether it found one */
};

#endif
