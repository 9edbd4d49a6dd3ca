// SPDX-License-Identifier: Apache-2.0
//
// koi's xdp_model.p4: the XDP model of p4c's eBPF back end, built into the koi binary and
// used for `#include <xdp_model.p4>`. It also declares the ebpfFilter model (ebpf_model.p4).
//
// The declarations are compatible with p4c's xdp_model.p4 of the same name, so that a program
// written for p4c compiles unchanged with koi. The comments describe what koi does.
//
// A packet goes through the xdp package's three blocks: xdp_parse, xdp_switch, xdp_deparse.
// The deparser's output replaces the bytes the parser extracted; the rest of the packet
// follows. What happens then is omd.output_action's (XDP_ABORTED when the switch starts):
// XDP_PASS hands the packet up on the interface it came from (in koi: it leaves on the input
// port), XDP_TX sends it back out of that port, XDP_REDIRECT sends it to omd.output_port,
// XDP_DROP and XDP_ABORTED drop it. A packet the parser rejects is dropped.

#ifndef _XDP_MODEL_P4
#define _XDP_MODEL_P4

#include <core.p4>
#include <ebpf_model.p4>

enum xdp_action {
    XDP_ABORTED,  // an error: the packet is dropped
    XDP_DROP,     // the packet is dropped
    XDP_PASS,     // the packet goes up the input interface
    XDP_TX,       // the packet leaves on the input interface
    XDP_REDIRECT  // the packet leaves on output_port
}

struct xdp_input {
    bit<32> input_port;
}

struct xdp_output {
    xdp_action output_action;
    bit<32> output_port;  // where XDP_REDIRECT sends the packet
}

// The IPv4 header checksum of the fields given (the checksum field taken as 0).
extern bit<16> ebpf_ipv4_checksum(in bit<4> version, in bit<4> ihl, in bit<8> diffserv,
                                  in bit<16> totalLen, in bit<16> identification, in bit<3> flags,
                                  in bit<13> fragOffset, in bit<8> ttl, in bit<8> protocol,
                                  in bit<32> srcAddr, in bit<32> dstAddr);

// Incremental checksum updates (RFC 1624): the checksum `csum` after a 16-bit or 32-bit field
// changed from `old` to `new`.
extern bit<16> csum_replace2(in bit<16> csum,
                             in bit<16> old,
                             in bit<16> new);
extern bit<16> csum_replace4(in bit<16> csum,
                             in bit<32> old,
                             in bit<32> new);

// Not implemented by koi: a program that calls it does not compile.
extern bit<32> BPF_PERF_EVENT_OUTPUT();
// Nanoseconds of the switch's clock, cut to 32 bits.
extern bit<32> BPF_KTIME_GET_NS();

parser xdp_parse<H>(packet_in packet, out H headers);
control xdp_switch<H>(inout H headers, in xdp_input imd, out xdp_output omd);
control xdp_deparse<H>(in H headers, packet_out packet);

package xdp<H>(xdp_parse<H> p, xdp_switch<H> s, xdp_deparse<H> d);

#endif  /* _XDP_MODEL_P4 */
