# shellcheck shell=bash
# The key-value store's topology: namespaces <tag>-r0 (server) .. r<N-1>
# (clients), veth0 = 10.79.23.(K+1)/24 each, plugged into a bridge in
# <tag>-br, XDP_PASS on the bridge ports (frames the runtime sends with
# XDP_TX arrive there).  Source after selftests/lib/netns.sh; everything is
# registered with spin_ns_add, so spin_ns_cleanup removes it.
#
#   kv_topo_up TAG N HOSTFILE   build it and write the hostfile (rank K = .K+1)
#   kv_ns TAG K                 the namespace of rank K
#   kv_ip K                     the address of rank K

kv_ns() { echo "$1-r$2"; }
kv_ip() { echo "10.79.23.$(($1 + 1))"; }

kv_topo_up() {
	local tag=$1 n=$2 hosts=$3 k ns br=$1-br
	spin_ns_add "$br" || return 1
	ip -n "$br" link add br0 type bridge || return 1
	ip -n "$br" link set br0 up
	: >"$hosts"
	for k in $(seq 0 $((n - 1))); do
		ns=$(kv_ns "$tag" "$k")
		spin_ns_add "$ns" || return 1
		ip link add veth0 netns "$ns" type veth peer name "p$k" netns "$br" || return 1
		ip -n "$ns" addr add "$(kv_ip "$k")/24" dev veth0
		ip -n "$ns" link set veth0 up
		ip -n "$br" link set "p$k" master br0
		ip -n "$br" link set "p$k" up
		nsx "$ns" ethtool -K veth0 gro on tx off >/dev/null 2>&1
		nsx "$br" ethtool -K "p$k" gro on tx off >/dev/null 2>&1
		spin_ns_xdp_pass "$br" "p$k" || return 1
		kv_ip "$k" >>"$hosts"
	done
	# neighbours resolved before the first request
	for k in $(seq 1 $((n - 1))); do
		nsx "$(kv_ns "$tag" "$k")" ping -c1 -W1 "$(kv_ip 0)" >/dev/null 2>&1
	done
	return 0
}
