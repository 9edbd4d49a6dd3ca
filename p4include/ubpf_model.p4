// SPDX-License-Identifier: Apache-2.0
//
// koi's ubpf_model.p4: the uBPF architecture of p4c's uBPF back end (the model of P4rt-OVS,
// Open vSwitch extended with P4 programs), built into the koi binary and used for
// `#include <ubpf_model.p4>`.
//
// The declarations are compatible with p4c's ubpf_model.p4 of the same name (same names, type
// parameters, parameter names and directions, annotations and order, and the same dependence
// on UBPF_MODEL_VERSION), so that a program written for p4c compiles unchanged with koi. The
// comments describe what koi does; its uBPF semantics are those of p4c's uBPF target.
//
// A packet goes through the ubpf package's three blocks: parse, pipeline, deparser. The
// deparser's output replaces the headers the parser extracted; the rest of the packet follows.
// Each packet carries a hidden pass/drop flag, initially "pass", that only mark_to_drop and
// mark_to_pass change: a dropped packet goes nowhere, a passed one leaves on
// standard_metadata.output_port (0 unless the program sets it).
//
// A program may `#define UBPF_MODEL_VERSION <yyyymmdd>` before the #include. Versions older
// than 20200515 have no standard_metadata: parse and pipeline then have no `std` parameter.

#ifndef _UBPF_MODEL_P4_
#define _UBPF_MODEL_P4_

#include <core.p4>

#ifndef UBPF_MODEL_VERSION
#define UBPF_MODEL_VERSION 20200515
#endif

// The version the declarations below were chosen for, readable by the program.
const bit<32> __ubpf_model_version = UBPF_MODEL_VERSION;

#if UBPF_MODEL_VERSION >= 20200515
// What the host switch should do with the packet, for hosts that act on it (P4rt-OVS).
enum ubpf_action {
    ABORT,    // Abort the processing of the packet.
    DROP,     // Drop the packet.
    PASS,     // Let the packet continue its normal path.
    REDIRECT  // Send the packet to output_port.
}

// Per-packet metadata, shared by parse and pipeline.
struct standard_metadata {
    bit<32>     input_port;     // Port the packet arrived on.
    bit<32>     packet_length;  // Length of the received packet in bytes.
    ubpf_action output_action;  // See ubpf_action.
    bit<32>     output_port;    // Port a passed packet leaves on; 0 unless set.
    bool        clone;          // Also send a copy of the packet to clone_port.
    bit<32>     clone_port;     // Port of that copy.
}
#endif

// Sets the packet's hidden flag to "drop". Call it in the pipeline control.
extern void mark_to_drop();

// Sets the packet's hidden flag back to "pass", cancelling an earlier mark_to_drop. Call it in
// the pipeline control.
extern void mark_to_pass();

// State kept across packets: up to `size` values of type T (bit<W>), each stored under an
// index of type S, usable in actions and apply blocks. read(index) returns the value stored
// under `index`, or 0 if none was; write(index, value) stores `value` under `index`.
extern Register<T, S> {
    Register(bit<32> size);
    T read(in S index);
    void write(in S index, in T value);
}

// The current time in nanoseconds.
extern bit<48> ubpf_time_get_ns();

// Cuts the outgoing packet to at most `len` bytes; a shorter packet is unchanged. As in p4c's
// uBPF target, the cut is made before the deparser writes the headers, and a header that no
// longer fits in the packet is not written.
extern void truncate(in bit<32> len);

// Hash algorithms of hash().
enum HashAlgorithm {
    lookup3  // Bob Jenkins' lookup3.
}

// Writes the 32-bit hash of `data` (a tuple of bit<W>, int<W> or varbit fields, at most 64
// bits wide in p4c's uBPF back end) computed with `algo` to `result`.
extern void hash<D>(out bit<32> result, in HashAlgorithm algo, in D data);

// Incremental checksum update (RFC 1624): returns the 16-bit Internet checksum `csum`
// updated for a 16-bit field of the data changing from `old` to `new`.
extern bit<16> csum_replace2(in bit<16> csum,
                             in bit<16> old,
                             in bit<16> new);

// The same for a 32-bit field.
extern bit<16> csum_replace4(in bit<16> csum,
                             in bit<32> old,
                             in bit<32> new);

// ---------------------------------------------------------------------------------------------
// The architecture. H is a struct of headers, header unions and header stacks; M is a struct
// of user metadata.
//
// parse extracts the headers. A packet the parser rejects skips the pipeline and is passed on
// unchanged (p4c's uBPF program then returns "abort", which its harness treats as pass).
// pipeline is the match-action processing.

#if UBPF_MODEL_VERSION >= 20200515
parser parse<H, M>(packet_in packet, out H headers, inout M meta, inout standard_metadata std);
control pipeline<H, M>(inout H headers, inout M meta, inout standard_metadata std);
#else
parser parse<H, M>(packet_in packet, out H headers, inout M meta);
control pipeline<H, M>(inout H headers, inout M meta);
#endif

// Builds the outgoing headers with packet_out.emit calls.
@deparser
control deparser<H>(packet_out b, in H headers);

// The top-level package; a program instantiates it as `main`.
package ubpf<H, M>(parse<H, M> prs,
                   pipeline<H, M> p,
                   deparser<H> dprs);

#endif // _UBPF_MODEL_P4_
