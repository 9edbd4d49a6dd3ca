"""PTF tests of koi running examples/l2l3_acl.p4 with examples/l2l3_acl.entries.

Run by crates/koi/tests/e2e_ptf.rs (cargo test) with the ptf CLI against koi over veth pairs:

    ptf --test-dir tests/ptf --interface 1@<peer of koi port 1> --interface 2@<peer of port 2> l2l3_acl

PTF port N is koi port N. Port 1 is VLAN 100 (hosts 02:00:00:00:01:00, :02, ...), port 2 is
VLAN 200; the router MAC is 02:00:00:00:00:fe and every route of the example leads out of port 2.
"""

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from ptf.packet import IP, Dot1Q, Ether

ROUTER = "02:00:00:00:00:fe"
HOST_A = "02:00:00:00:01:00"  # port 1, VLAN 100
HOST_A2 = "02:00:00:00:01:02"  # port 1, VLAN 100
HOST_B = "02:00:00:00:01:03"  # port 2, VLAN 200
PORT_A, PORT_B = 1, 2


def nexthop(n):
    return "02:00:00:00:02:%02x" % n


def routed(pkt, nh):
    """What the router makes of pkt: VLAN popped, MACs rewritten, TTL - 1, IPv4 checksum
    recomputed; everything else as sent."""
    e = Ether(bytes(pkt))
    if Dot1Q in e:
        e = Ether(dst=e.dst, src=e.src, type=e[Dot1Q].type) / e[Dot1Q].payload
    e.dst, e.src = nh, ROUTER
    e[IP].ttl = (e[IP].ttl - 1) & 0xFF
    del e[IP].chksum
    return Ether(bytes(e))


def receive_unordered(test, expected, port, timeout=2):
    """Receives len(expected) packets on `port` and checks that they are `expected` in some
    order: packets of different flows may be forwarded by different poll threads, and a
    switch keeps order within a flow, not across flows."""
    want = sorted(bytes(p) for p in expected)
    got = []
    while len(got) < len(want):
        r = tu.dp_poll(test, device_number=0, port_number=port, timeout=timeout)
        if not isinstance(r, test.dataplane.PollSuccess):
            break
        got.append(bytes(r.packet))
    test.assertEqual(len(got), len(want), "packets received on port %d" % port)
    test.assertEqual(sorted(got), want, "the packets received are those expected")


class KoiTest(BaseTest):
    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()

    def udp(self, dst, **kw):
        args = dict(eth_dst=ROUTER, eth_src=HOST_A, ip_src="198.18.0.1", ip_dst=dst, ip_ttl=64)
        args.update(kw)
        return tu.simple_udp_packet(**args)

    def tcp(self, dst, **kw):
        args = dict(eth_dst=ROUTER, eth_src=HOST_A, ip_src="198.18.0.1", ip_dst=dst, ip_ttl=64)
        args.update(kw)
        return tu.simple_tcp_packet(**args)


class RoutedUdp(KoiTest):
    """Routed: MACs rewritten, TTL decremented, checksum recomputed (built independently here
    with simple_udp_packet)."""

    def runTest(self):
        pkt = self.udp("198.19.16.5")
        exp = tu.simple_udp_packet(
            eth_dst=nexthop(1), eth_src=ROUTER, ip_src="198.18.0.1", ip_dst="198.19.16.5", ip_ttl=63
        )
        tu.send_packet(self, PORT_A, pkt)
        tu.verify_packet(self, exp, PORT_B)
        tu.verify_no_other_packets(self)


class RoutedTcpLongestPrefix(KoiTest):
    """The longest matching prefix picks the next hop."""

    def runTest(self):
        for dst, nh in [
            ("198.19.1.7", 1),  # /24 inside a /20
            ("198.19.17.9", 2),  # /24
            ("198.19.48.1", 3),  # /20
            ("198.19.200.1", 3),  # /16
            ("198.51.100.9", 0),  # default route
        ]:
            pkt = self.tcp(dst, tcp_dport=443)
            exp = tu.simple_tcp_packet(
                eth_dst=nexthop(nh), eth_src=ROUTER, ip_src="198.18.0.1", ip_dst=dst, ip_ttl=63, tcp_dport=443
            )
            tu.send_packet(self, PORT_A, pkt)
            tu.verify_packet(self, exp, PORT_B)
        tu.verify_no_other_packets(self)


class VlanTaggedIsPopped(KoiTest):
    """A frame tagged with its port's VLAN is routed and leaves untagged."""

    def runTest(self):
        pkt = self.udp("198.19.16.5", dl_vlan_enable=True, vlan_vid=100, pktlen=104)
        exp = tu.simple_udp_packet(
            eth_dst=nexthop(1), eth_src=ROUTER, ip_src="198.18.0.1", ip_dst="198.19.16.5", ip_ttl=63
        )
        tu.send_packet(self, PORT_A, pkt)
        tu.verify_packet(self, exp, PORT_B)
        tu.verify_no_other_packets(self)


class AclDropsAndNearMisses(KoiTest):
    """ACL entries drop their five-tuples; a change of one field lets the packet through."""

    def runTest(self):
        drop_udp = self.udp("198.19.0.1", ip_src="198.18.200.1", udp_sport=40000, udp_dport=53)
        drop_tcp = self.tcp("198.19.16.2", ip_src="198.18.201.2", tcp_sport=40001, tcp_dport=80)
        for pkt in (drop_udp, drop_tcp):
            tu.send_packet(self, PORT_A, pkt)
            tu.verify_no_other_packets(self, timeout=0.3)
        near_udp = self.udp("198.19.0.1", ip_src="198.18.200.1", udp_sport=40000, udp_dport=54)
        near_tcp = self.tcp("198.19.16.2", ip_src="198.18.201.2", tcp_sport=40002, tcp_dport=80)
        for pkt, nh in ((near_udp, 0), (near_tcp, 1)):
            tu.send_packet(self, PORT_A, pkt)
            tu.verify_packet(self, routed(pkt, nexthop(nh)), PORT_B)
        tu.verify_no_other_packets(self)


class Drops(KoiTest):
    """Unknown destination MAC, a source that may not be routed, a foreign VLAN, non-IPv4 to the
    router: all dropped."""

    def runTest(self):
        arp = tu.simple_arp_packet(eth_dst=ROUTER, eth_src=HOST_A, ip_snd="198.18.0.1", ip_tgt="198.18.0.254")
        for pkt in (
            self.udp("198.19.16.5", eth_dst="02:00:00:00:09:99"),
            self.udp("198.19.16.5", eth_src="02:00:00:00:01:09"),
            self.udp("198.19.16.5", dl_vlan_enable=True, vlan_vid=200, pktlen=104),
            self.udp("198.19.16.5", eth_dst=HOST_B),  # HOST_B is in VLAN 200, not port 1's
            arp,
        ):
            tu.send_packet(self, PORT_A, pkt)
        tu.verify_no_other_packets(self, timeout=0.5)


class L2SwitchedBackToItsPort(KoiTest):
    """A frame to a host of port 1's VLAN is switched (unchanged) back out of port 1."""

    def runTest(self):
        pkt = tu.simple_udp_packet(eth_dst=HOST_A2, eth_src=HOST_A, ip_src="198.18.0.1", ip_dst="198.18.0.3")
        tu.send_packet(self, PORT_A, pkt)
        tu.verify_packet(self, pkt, PORT_A)
        tu.verify_no_other_packets(self)


class RoutedFromPort2(KoiTest):
    """A host of port 2 (VLAN 200) is routed too."""

    def runTest(self):
        pkt = self.udp("198.19.0.9", eth_src=HOST_B, ip_src="198.19.16.5", ip_ttl=5)
        tu.send_packet(self, PORT_B, pkt)
        tu.verify_packet(self, routed(pkt, nexthop(0)), PORT_B)
        tu.verify_no_other_packets(self)


class RoutedBurstInOrder(KoiTest):
    """A burst of 64 routed packets of 64 flows all arrive, each rewritten; a burst of 64 of
    one flow arrives rewritten and in order."""

    def runTest(self):
        pkts = [self.udp("198.19.16.5", udp_sport=10000 + i, ip_ttl=2 + i) for i in range(64)]
        for pkt in pkts:
            tu.send_packet(self, PORT_A, pkt)
        receive_unordered(self, [routed(p, nexthop(1)) for p in pkts], PORT_B)
        tu.verify_no_other_packets(self)
        pkts = [self.udp("198.19.16.5", udp_sport=9999, ip_ttl=2 + i) for i in range(64)]
        for pkt in pkts:
            tu.send_packet(self, PORT_A, pkt)
        for pkt in pkts:
            tu.verify_packet(self, routed(pkt, nexthop(1)), PORT_B)
        tu.verify_no_other_packets(self)
