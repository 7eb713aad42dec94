#!/bin/sh
# The veth link between rxe_a (198.51.100.1) and rxe_b (198.51.100.2) in the VM, and the faults
# put on it (see guest-network.sh). Each fault applies to both directions.
#
#   link.sh netem ARGS...   tc netem on both ends, e.g. `netem loss 5%`,
#                           `netem delay 2ms reorder 25% 50%` (jitter reorders too)
#   link.sh in-order ARGS...  the same with packets kept in order, for delay with jitter that
#                           does not reorder: `in-order delay 5ms 2ms` (netem schedules each
#                           packet after the one before it once a rate is set: 10gbit)
#   link.sh blackhole       every packet dropped (netem loss 100%)
#   link.sh clear           no fault
#   link.sh down | up       the pair's carrier down, or up again (its routes restored, its
#                           neighbour entries flushed)
#   link.sh show            the qdiscs and their counters
#   link.sh routes          the policy routes that send traffic across the pair
set -eu
a=198.51.100.1 b=198.51.100.2
routes() {
  ip route replace $b dev veth_a src $a table 100
  ip route replace $a dev veth_b src $b table 101
  ip rule show | grep -q "lookup 100" || ip rule add pref 10 iif lo to $b lookup 100
  ip rule show | grep -q "lookup 101" || ip rule add pref 10 iif lo to $a lookup 101
}
case ${1:-} in
  netem)
    shift
    for end in veth_a veth_b; do tc qdisc replace dev $end root netem "$@"; done ;;
  in-order)
    shift
    for end in veth_a veth_b; do tc qdisc replace dev $end root netem "$@" rate 10gbit; done ;;
  blackhole)
    for end in veth_a veth_b; do tc qdisc replace dev $end root netem loss 100%; done ;;
  clear)
    for end in veth_a veth_b; do tc qdisc del dev $end root 2>/dev/null || true; done ;;
  down) ip link set veth_a down ;;
  up)
    ip link set veth_a up
    # the carrier returns a moment after the device
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      [ "$(cat /sys/class/net/veth_b/carrier 2>/dev/null)" = 1 ] && break
      sleep 0.2
    done
    routes
    # neighbour entries that failed while the link was down: resolved afresh
    ip neigh flush dev veth_a
    ip neigh flush dev veth_b ;;
  show) for end in veth_a veth_b; do tc -s qdisc show dev $end; done ;;
  routes) routes ;;
  *) echo "usage: link.sh netem ARGS... | in-order ARGS... | blackhole | clear | down | up | show | routes" >&2; exit 2 ;;
esac
