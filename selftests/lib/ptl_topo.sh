# shellcheck shell=bash
# Topology of the Portals tests: N (2..4) namespaces <tag>-r0..r<N-1>, each
# with veth0 = 10.78.1.(K+1)/24, all plugged into a bridge in namespace
# <tag>-br.  Source after selftests/lib/netns.sh; everything made here is
# registered with spin_ns_add, so spin_ns_cleanup removes it.
#
#   ptl_topo_up TAG N DIR [Q]  build it; writes DIR/hosts2 .. DIR/hostsN;
#                           Q: queues of each veth (default 1; a Portals
#                           process in slot S needs queue S)
#   ptl_ns TAG K            the namespace of rank K

ptl_ns() { echo "$1-r$2"; }

ptl_topo_up() {
	local tag=$1 n=$2 dir=$3 q=${4:-1} k ns br=$1-br
	spin_ns_bridge "$br" || return 1
	for k in $(seq 0 $((n - 1))); do
		ns=$(ptl_ns "$tag" "$k")
		spin_ns_add "$ns" || return 1
		ip link add veth0 netns "$ns" numtxqueues "$q" numrxqueues "$q" type veth \
			peer name "p$k" netns "$br" numtxqueues "$q" numrxqueues "$q" || return 1
		ip -n "$ns" addr add "10.78.1.$((k + 1))/24" dev veth0
		ip -n "$ns" link set veth0 up
		ip -n "$br" link set "p$k" master br0
		ip -n "$br" link set "p$k" up
		nsx "$ns" ethtool -K veth0 gro on tx off >/dev/null 2>&1
		nsx "$br" ethtool -K "p$k" gro on tx off >/dev/null 2>&1
		# frames the runtime sends with XDP_TX arrive on the bridge port
		spin_ns_xdp_pass "$br" "p$k" || return 1
	done
	for k in $(seq 2 "$n"); do
		: >"$dir/hosts$k"
		for r in $(seq 0 $((k - 1))); do
			echo "10.78.1.$((r + 1))" >>"$dir/hosts$k"
		done
	done
	return 0
}
