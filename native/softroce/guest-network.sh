#!/bin/sh
# Inside the VM (vm runs it before the command): the kernel RDMA modules and three places to use
# them. The VM has no network card; nothing sent here leaves it.
#
#   rxe_lo          Soft-RoCE on the loopback device: plain verbs, GID index 1 (::ffff:127.0.0.1).
#                   rdma_cm cannot resolve routes over loopback.
#   rxe0            Soft-RoCE on dummy0, which holds 192.0.2.1/24 and 192.0.2.2/24: rdma_cm with a
#                   server at .1 and a client from .2, a perfect link (packets never leave the
#                   host's own stack).
#   rxe_a, rxe_b    Soft-RoCE on the two ends of a veth pair, veth_a (198.51.100.1/24) and veth_b
#                   (198.51.100.2/24): every packet between the two addresses crosses the pair, so
#                   link.sh's netem rules and link flaps act on real RoCE traffic.
#
# Why both ends live in one network namespace: Linux 6.1's rxe receives RoCE (UDP 4791) on a
# socket of the initial namespace only, so a device whose netdev sits in another namespace never
# sees its packets. Between two addresses of one host the kernel would route through loopback,
# so policy routing sends what the host itself originates for one end out of the other end's
# device, and the receiving side accepts a local source address.
set -u
modprobe rdma_rxe; modprobe rdma_ucm; modprobe ib_uverbs; modprobe sch_netem
ip link set lo up

ip link add dummy0 type dummy
ip addr add 192.0.2.1/24 dev dummy0
ip addr add 192.0.2.2/24 dev dummy0
ip link set dummy0 up
rdma link add rxe_lo type rxe netdev lo
rdma link add rxe0 type rxe netdev dummy0

ip link add veth_a type veth peer name veth_b
for end in a b; do
  sysctl -qw net.ipv4.conf.veth_$end.accept_local=1 net.ipv4.conf.veth_$end.rp_filter=0
done
sysctl -qw net.ipv4.conf.all.rp_filter=0
ip addr add 198.51.100.1/24 dev veth_a
ip addr add 198.51.100.2/24 dev veth_b
ip link set veth_a up
ip link set veth_b up
sh "$(dirname "$0")/link.sh" routes
ip rule add pref 1000 lookup local
ip rule del pref 0 lookup local
rdma link add rxe_a type rxe netdev veth_a
rdma link add rxe_b type rxe netdev veth_b
