"""PTF tests of koi running examples/l2_forward.p4 with examples/l2_forward.entries (port 1 <->
port 2, frames unchanged). Run by crates/koi/tests/e2e_ptf.rs:

    ptf --test-dir tests/ptf --interface 1@<peer of koi port 1> --interface 2@<peer of port 2> l2_forward
"""

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest


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


class BothWays(KoiTest):
    """UDP, TCP, tagged and ARP frames cross unchanged in both directions, and only to the
    other port."""

    def runTest(self):
        for src, dst in ((1, 2), (2, 1)):
            for pkt in (
                tu.simple_udp_packet(eth_dst="02:00:00:00:01:%02x" % dst, eth_src="02:00:00:00:01:%02x" % src),
                tu.simple_tcp_packet(pktlen=1514, tcp_flags="PA"),
                tu.simple_udp_packet(dl_vlan_enable=True, vlan_vid=42, vlan_pcp=3),
                tu.simple_arp_packet(),
            ):
                tu.send_packet(self, src, pkt)
                tu.verify_packet(self, pkt, dst)
        tu.verify_no_other_packets(self)


class Burst(KoiTest):
    """A burst of 100 frames of 100 flows arrives complete; a burst of 100 frames of one flow
    arrives complete and in order."""

    def runTest(self):
        pkts = [tu.simple_udp_packet(udp_sport=i + 1) for i in range(100)]
        for pkt in pkts:
            tu.send_packet(self, 1, pkt)
        receive_unordered(self, pkts, 2)
        tu.verify_no_other_packets(self)
        pkts = [tu.simple_udp_packet(udp_sport=7, ip_id=i + 1) for i in range(100)]
        for pkt in pkts:
            tu.send_packet(self, 1, pkt)
        for pkt in pkts:
            tu.verify_packet(self, pkt, 2)
        tu.verify_no_other_packets(self)
