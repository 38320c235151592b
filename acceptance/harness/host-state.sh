#!/usr/bin/env bash
# host-state.sh — prints what a cluster could leave behind on this machine, one sorted line per
# item, so that two snapshots (before a cluster starts, after it stopped) can be compared with diff:
# network interfaces and namespaces, iptables rules and chains (IPv4 and IPv6) and ipsets of the
# root namespace, mounts, cgroups named like ours, processes of the cluster's binaries, the
# sysctls the kubelet changes, what the nodes keep under /run, and the kubespaces blocks of /etc/hosts.
# Used by run-tests.sh (around the whole test run) and the node lifecycle test.
#
# Usage: host-state.sh [--except STATE_DIR]
#   --except leaves out what belongs to the cluster running in STATE_DIR (its namespace, link,
#   guard chain, cgroups, mounts and processes, and the operators tests run against it), whose
#   pods may come and go meanwhile.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=acceptance/harness/node-lib.sh
. "$(dirname "$0")/node-lib.sh"

skip='^$'        # an extended regex of lines to leave out
skip_pids=" "
if [ "${1:-}" = --except ]; then
  [ $# -eq 2 ] || die "usage: $0 [--except STATE_DIR]"
  except=$(cd "$2" && pwd)
  node_ids "$except"
  skip="$NODE_NS|$NODE_LINK|KUBESPACES-GUARD-$NODE_ID|/$NODE_CGROUP|/run/kubespaces/$NODE_ID|^$except/"
  NODE_INO=$(node_netns_inode)
  for n in etcd kube-apiserver kube-controller-manager kube-scheduler kwok operator; do
    pid=$(pid_alive "$except" "$n") && skip_pids+="$pid "
  done
fi

# excepted PID: the process belongs to the --except cluster. Decided per process while the
# processes are listed (not from a list taken before), because that cluster's pods and the
# operators its tests start come and go meanwhile: in its node (network namespace or cgroup), or
# an operator started against it (its KUBECONFIG lies in that state dir).
excepted() {
  [ -n "${except:-}" ] || return 1
  [[ "$skip_pids" != *" $1 "* ]] || return 0
  pid_in_node "$1" "$NODE_INO" && return 0
  [ "$(proc_exe_name "$1" 2>/dev/null)" = kubespaces-operator ] \
    && tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep -q "^KUBECONFIG=$except/"
}

section() { printf '== %s\n' "$1"; }

snapshot() {

  section links;   ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
  section netns;   ip netns list 2>/dev/null | awk '{print $1}' | sort
  section iptables
  for t in iptables-save ip6tables-save; do
    command -v "$t" >/dev/null || continue
    # Counters and the generated-by comments change between two identical rule sets, and a table
    # that holds nothing but built-in chains accepting everything is no rule at all (the kernel
    # shows the table once anything has touched it). Each line is prefixed with its table.
    "$t" 2>/dev/null | awk -v t="$t" '
      /^#/ || /^COMMIT/ { next }
      /^\*/ { table = substr($0, 2); next }
      /^:(INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) ACCEPT/ { next }
      { gsub(/\[[0-9]+:[0-9]+\]/, ""); print t, table, $0 }'
  done | sort
  section ipsets;  { command -v ipset >/dev/null && ipset list -n 2>/dev/null; } | sort || true
  section mounts;  awk '{print $2, $3}' /proc/self/mounts | sort
  section cgroups
  find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d \( -name 'kubespaces-*' -o -name kubepods \
    -o -name 'kubepods*' \) 2>/dev/null | sort
  section processes
  for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    case $(basename "${exe% (deleted)}") in
      etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy|kube-router|kwok|\
      containerd|containerd-shim-runc-v2|coredns|pause|kubespaces-operator)
        excepted "${p#/proc/}" || echo "${exe% (deleted)}" ;;
    esac
  done | sort | uniq -c
  section sysctls; sysctl vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward
  # The clusters' blocks in /etc/hosts (hosts-sync.py), but the running one's (--except).
  section hosts;   python3 "$HARNESS_DIR/hosts-sync.py" show ${except:+--except "$except"}
  section files;   find /run/kubespaces /run/containerd -maxdepth 2 2>/dev/null | sort || true
}

snapshot | grep -Ev "$skip"
