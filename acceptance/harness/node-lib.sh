# shellcheck shell=bash
# The node's network and host-side bookkeeping, shared by cluster-up.sh and cluster-down.sh.
# Sourced after lib.sh.
#
# Every cluster runs in a network namespace of its own, like a kind node runs in a container: etcd,
# the control plane, containerd, the kubelet, kube-proxy and kube-router all join it, so their
# iptables chains, ipsets, the pod bridge and the pod and Service CIDRs never touch the machine's
# root namespace, and two clusters (dev and test) run side by side with the same inside layout.
# The root namespace sees one veth link per cluster:
#
#   root namespace                          node namespace kubespaces-<id>
#   ks-<id>  10.250.<i>.1/30  <-- veth -->  eth0  10.250.<i>.2/30   (the node's address: API
#                                           cni0  10.244.0.1/24     server :6443, kubelet :10250)
#                                           pods  10.244.0.0/24     Services 10.96.0.0/16
#
# Nothing in the node namespace has a default route, so pods and components can reach the node's
# own addresses and the pod network only; guard rules drop anything forwarded elsewhere, and new
# connections from the node to the machine (the root side of the link).

NODE_POD_CIDR=10.244.0.0/24
NODE_BRIDGE_IP=10.244.0.1
NODE_SERVICE_CIDR=10.96.0.0/16
NODE_DNS_IP=10.96.0.10
NODE_LINK_PREFIX=${KUBESPACES_LINK_PREFIX:-10.250}   # /16 from which each cluster takes a /30

# node_ids STATE: sets NODE_ID (6 hex of the state dir's path), NODE_NS, NODE_LINK and NODE_NAME
# (the Kubernetes node name: kubespaces-<state dir name>).
node_ids() {
  local state=$1 base
  NODE_ID=$(printf '%s' "$state" | sha256sum | cut -c1-6)
  NODE_NS="kubespaces-$NODE_ID"
  NODE_LINK="ks-$NODE_ID"
  base=$(basename "$state" | tr '[:upper:]_.' '[:lower:]--' | tr -cd 'a-z0-9-' | cut -c1-40)
  NODE_NAME="kubespaces-${base:-node}"
  NODE_CGROUP="kubespaces-$NODE_ID"
  node_exec_init
}

# in_node CMD...: runs CMD in the node's network namespace (only the network: the mount namespace
# stays the machine's, so the kubelet's volume mounts are visible to containerd and runc).
# "${NODE_EXEC[@]}" is the same as a command prefix, for start_bg (which needs a program).
in_node() { nsenter --net="/run/netns/$NODE_NS" -- "$@"; }
node_exec_init() { NODE_EXEC=(nsenter "--net=/run/netns/$NODE_NS" --); }

# net_up STATE: creates the namespace, the link and the bridge, and writes STATE/run/node.env.
net_up() {
  local state=$1 i
  net_down "$state"   # whatever a crashed node of this state dir left behind
  node_ids "$state"
  # Read once, not piped into grep -q: under pipefail, grep exiting at the first match can kill ip
  # with SIGPIPE (2 % of tries here), a taken /30 then looks free and two links share it.
  local addrs
  addrs=$(ip -4 -o addr show)
  for i in $(seq 1 254); do
    grep -q " $NODE_LINK_PREFIX\.$i\.1/" <<<"$addrs" || break
  done
  NODE_HOST_IP="$NODE_LINK_PREFIX.$i.1"
  NODE_IP="$NODE_LINK_PREFIX.$i.2"
  # Recorded first, so a failure halfway is still cleaned up by net_down.
  cat >"$state/run/node.env" <<EOF
NODE_ID=$NODE_ID
NODE_NS=$NODE_NS
NODE_LINK=$NODE_LINK
NODE_NAME=$NODE_NAME
NODE_CGROUP=$NODE_CGROUP
NODE_HOST_IP=$NODE_HOST_IP
NODE_IP=$NODE_IP
EOF
  ip netns add "$NODE_NS"
  ip link add "$NODE_LINK" type veth peer name eth0 netns "$NODE_NS"
  ip addr add "$NODE_HOST_IP/30" dev "$NODE_LINK"
  ip link set "$NODE_LINK" up
  in_node ip link set lo up
  in_node ip addr add "$NODE_IP/30" dev eth0
  in_node ip link set eth0 up
  in_node ip link add cni0 type bridge
  in_node ip addr add "$NODE_BRIDGE_IP/24" dev cni0
  in_node ip link set cni0 up
  # Routing between pods and Services, and iptables on bridged traffic (kube-proxy's DNAT and the
  # NetworkPolicy rules see pod-to-pod packets on the bridge). Both are per namespace.
  in_node sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 \
    net.bridge.bridge-nf-call-ip6tables=1
  guard_up
}

# Root namespace: the node may answer, never open a connection to the machine, and nothing is
# forwarded through the link. Node namespace: forwarded packets may only leave through the pod
# bridge (no pod reaches the link, let alone beyond it), and the node opens nothing towards the
# machine either.
guard_up() {
  local c="KUBESPACES-GUARD-$NODE_ID"
  iptables -w -N "$c"
  iptables -w -A "$c" -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
  iptables -w -A "$c" -j DROP
  iptables -w -I INPUT 1 -i "$NODE_LINK" -j "$c"
  iptables -w -I FORWARD 1 -i "$NODE_LINK" -j DROP
  iptables -w -I FORWARD 1 -o "$NODE_LINK" -j DROP
  in_node iptables -w -N KUBESPACES-GUARD
  in_node iptables -w -A KUBESPACES-GUARD -o cni0 -j RETURN
  in_node iptables -w -A KUBESPACES-GUARD -j DROP
  in_node iptables -w -I FORWARD 1 -j KUBESPACES-GUARD
  in_node iptables -w -I OUTPUT 1 -o eth0 -m conntrack --ctstate NEW -j DROP
}

# Removes the rules guard_up added in the root namespace (the node's go with its namespace).
guard_down() {
  local c="KUBESPACES-GUARD-$NODE_ID"
  while iptables -w -D INPUT -i "$NODE_LINK" -j "$c" 2>/dev/null; do :; done
  while iptables -w -D FORWARD -i "$NODE_LINK" -j DROP 2>/dev/null; do :; done
  while iptables -w -D FORWARD -o "$NODE_LINK" -j DROP 2>/dev/null; do :; done
  iptables -w -F "$c" 2>/dev/null || true
  iptables -w -X "$c" 2>/dev/null || true
}

# The inode of the node's network namespace (empty when there is none), for pid_in_node.
node_netns_inode() { stat -Lc %i "/run/netns/$NODE_NS" 2>/dev/null || true; }

# pid_in_node PID INODE: the process is in the node's network namespace (INODE, from
# node_netns_inode: the components, and the shims, which containerd starts there) or in the
# node's cgroups (the containers, which live in network namespaces of their own).
# (Each test sits in an `if`: a bare failing command here would fire the harness's ERR trap.)
pid_in_node() {
  if [ -n "$2" ] && [ "$(stat -Lc %i "/proc/$1/ns/net" 2>/dev/null)" = "$2" ]; then
    return 0
  fi
  if grep -q ":/$NODE_CGROUP/" "/proc/$1/cgroup" 2>/dev/null; then return 0; fi
  return 1
}

# Pids of every process in the node (see pid_in_node).
node_pids() {
  local ino p
  ino=$(node_netns_inode)
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    if pid_in_node "$p" "$ino"; then echo "$p"; fi
  done
}

# net_down STATE: kills what is left in the namespace and its cgroups, unmounts what the node
# mounted, removes cgroups, the namespace, the link and the guard rules. Idempotent.
net_down() {
  local state=$1 pids m d
  if [ -f "$state/run/node.env" ]; then
    # shellcheck disable=SC1091
    . "$state/run/node.env"
  else
    node_ids "$state"   # a state dir whose run/ was removed by hand: the names are derived anyway
  fi
  pids=$(node_pids | tr '\n' ' ')
  if [ -n "${pids// /}" ]; then
    log "killing what is left in the node: $pids"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    for _ in $(seq 50); do
      [ -z "$(node_pids)" ] && break
      sleep 0.1
    done
  fi
  # Mounts under the state dir (pod volumes, overlay rootfs, sandbox namespaces), deepest first.
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v s="$state/" 'index($2, s) == 1 {print $2}' /proc/self/mounts | sort -r)
  # The node's cgroups in every hierarchy, deepest first (rmdir only removes empty ones).
  for d in /sys/fs/cgroup/*/"$NODE_CGROUP" /sys/fs/cgroup/"$NODE_CGROUP"; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "/run/kubespaces/$NODE_ID"   # containerd's shim sockets (node-up.sh)
  ip netns del "$NODE_NS" 2>/dev/null || true
  # `ip netns add` turns /run/netns into a mount point the first time; with no namespace left in
  # it, that mount goes too, so the machine's mount table is as before.
  if mountpoint -q /run/netns && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null || true
  fi
  ip link del "$NODE_LINK" 2>/dev/null || true
  guard_down
  sysctls_restore "$state"
  rm -f "$state/run/node.env"
}

# The kubelet sets three machine-wide sysctls (vm.overcommit_memory, kernel.panic,
# kernel.panic_on_oops). The values from before the first node started are kept in
# /run/kubespaces/sysctl-before and restored when the last node stops.
SYSCTL_RECORD=/run/kubespaces/sysctl-before
KUBELET_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
sysctls_record() {
  mkdir -p "$(dirname "$SYSCTL_RECORD")"
  echo "$1" >>"$(dirname "$SYSCTL_RECORD")/nodes"
  [ -f "$SYSCTL_RECORD" ] || sysctl "${KUBELET_SYSCTLS[@]}" >"$SYSCTL_RECORD"
}
sysctls_restore() {
  local nodes="$(dirname "$SYSCTL_RECORD")/nodes"
  [ -f "$nodes" ] || return 0
  grep -vx "$1" "$nodes" >"$nodes.tmp" || true
  mv "$nodes.tmp" "$nodes"
  if [ ! -s "$nodes" ] && [ -f "$SYSCTL_RECORD" ]; then
    sed 's/ = /=/' "$SYSCTL_RECORD" | xargs -r sysctl -qw
    rm -f "$SYSCTL_RECORD" "$nodes"
    rmdir "$(dirname "$SYSCTL_RECORD")" 2>/dev/null || true
  fi
}
