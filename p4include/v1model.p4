// SPDX-License-Identifier: Apache-2.0
//
// koi's v1model.p4: the v1model architecture, the P4-16 model of BMv2's simple_switch, built
// into the koi binary and used for `#include <v1model.p4>`.
//
// The declarations are compatible with p4c's v1model.p4 of the same name (same names, type
// parameters, parameter names and directions, overloads, annotations and order, and the same
// dependence on V1MODEL_VERSION), so that a program written for p4c compiles unchanged with
// koi. The comments describe what koi does; its v1model semantics are simple_switch's. One
// extension: HashAlgorithm has thirteen more members after p4c's, the FNV hashes (fnv1a_32, ...)
// and twemproxy's key hashes (hashkit_md5, ...).
//
// A packet goes through the V1Switch package's blocks in this order:
//
//   Parser -> VerifyChecksum -> Ingress -> traffic manager -> Egress -> ComputeChecksum
//          -> Deparser -> out of egress_port
//
// At the end of Ingress, in this order: an ingress clone is made if one was requested; a
// pending digest is sent; then the packet is resubmitted if requested, otherwise multicast to
// mcast_grp if it is not 0, otherwise dropped if egress_spec is the drop port 511, otherwise
// queued for port egress_spec. At the end of Egress: an egress clone is made if requested;
// then the packet is dropped if egress_spec is 511 (mark_to_drop in egress), otherwise
// deparsed and recirculated if requested, otherwise sent.
//
// A program may `#define V1MODEL_VERSION <yyyymmdd>` before the #include to get the
// declarations of that version. From 20200408 on, ports have the type PortId_t, and counter,
// meter and register take their index type as a type parameter.

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include <core.p4>

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

// Match kinds that v1model adds to core.p4's exact, ternary and lpm.
match_kind {
    range,    // The key lies in the entry's [low, high] interval (bounds included).
    optional, // The key equals the entry's value, or the entry leaves the field out (wildcard).
    selector  // Key fields hashed by an action_selector to pick a member of a group.
}

// The version the declarations below were chosen for, readable by the program.
const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
// A port number. 511 is the drop port.
typedef bit<9>  PortId_t;
#endif

// ---------------------------------------------------------------------------------------------
// Standard metadata: one instance per packet, zeroed when the packet enters the parser, then
// ingress_port, packet_length and instance_type are set. Fields that the traffic manager
// fills (queueing, egress timestamp, egress_rid) read as 0 in ingress.
// @alias gives the name of the same field in BMv2's intrinsic metadata.

@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t    ingress_port;  // Port the packet arrived on. Read only.
    PortId_t    egress_spec;   // Output port, chosen in ingress; 0 unless set, 511 = drop.
    PortId_t    egress_port;   // Port the packet leaves on; set when egress starts. Read only.
#else
    bit<9>      ingress_port;  // Port the packet arrived on. Read only.
    bit<9>      egress_spec;   // Output port, chosen in ingress; 0 unless set, 511 = drop.
    bit<9>      egress_port;   // Port the packet leaves on; set when egress starts. Read only.
#endif
    // Why this instance of the packet exists: 0 normal, 1 ingress clone, 2 egress clone,
    // 4 recirculated, 5 multicast copy, 6 resubmitted.
    bit<32>     instance_type;
    // Length of the packet in bytes as it entered the parser.
    bit<32>     packet_length;

    // Queueing, valid in egress only: enqueue time (microseconds), queue depth in packets at
    // enqueue, time spent in the queue (microseconds), queue depth in packets at dequeue.
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;

    // Time the packet entered ingress, in microseconds since the switch started.
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;
    // Time the packet entered egress (same clock); valid in egress only.
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;
    // Multicast group, set in ingress. Not 0 at the end of ingress: one copy of the packet
    // goes to each (port, replication id) of the group. mark_to_drop sets it to 0.
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;
    // Replication id of a multicast copy, in egress.
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;
    // 1 when a verify_checksum call found a wrong checksum, else 0. The packet is not dropped.
    bit<1>  checksum_error;
    // The error the parser ended with (error.NoError if it accepted). A parser error does not
    // drop the packet: ingress runs anyway, and unparsed bytes stay in the payload.
    error parser_error;
    // Priority of the packet in the output queues (0 to 7).
    @alias("intrinsic_metadata.priority")
    bit<3> priority;
}

// What a counter counts: packets, bytes (the packet's length), or both.
enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

// What a meter measures: the rate of packets, or of bytes.
enum MeterType {
    packets,
    bytes
}

// ---------------------------------------------------------------------------------------------
// Counters. The data plane only increments them; the control plane reads and writes them.

// An array of `size` counters, indexed 0 to size-1. count(index) increments the counter at
// `index` by one packet and/or the packet's length in bytes, as `type` says; an index out of
// range changes nothing.
#if V1MODEL_VERSION >= 20200408
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}
#else
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}
#endif

// A counter per entry of the one table that names it in `counters = <instance>;`. Each time the
// table is applied and an entry matches, that entry's counter is incremented, whether or not
// the action calls count(); count() itself adds nothing more.
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

// ---------------------------------------------------------------------------------------------
// Meters: two-rate three-colour markers (RFC 2698) configured by the control plane. The colour
// written to a result is one of these values; a meter that was never configured gives green.

#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

// An array of `size` meters, indexed 0 to size-1. execute_meter(index, result) measures this
// packet with the meter at `index` and writes its colour to `result` (a bit<W>, W >= 2). With
// an index out of range no meter changes and `result` is unspecified.
#if V1MODEL_VERSION >= 20200408
extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}
#else
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}
#endif

// A meter per entry of the one table that names it in `meters = <instance>;`. The matching
// entry's meter runs each time an entry matches; read(result), called in one of the table's
// actions, writes the colour it gave (T is bit<W>, W >= 2).
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

// ---------------------------------------------------------------------------------------------
// Registers: arrays of `size` values of type T (bit<W> or int<W>), indexed 0 to size-1, all 0
// when the program is loaded, readable and writable by the data plane and the control plane.
// The register accesses of one action are atomic with respect to other packets.
// read(result, index) writes the value at `index` to `result`; write(index, value) stores
// `value` there. Out of range, a write changes nothing and a read's result is unspecified.

#if V1MODEL_VERSION >= 20200408
extern register<T, I> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in I index);
    void write(in I index, in T value);
}
#else
extern register<T> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}
#endif

// A table implementation (`implementation = <instance>;`): the table's entries point at
// action members that the control plane manages; `size` is the number of members.
extern action_profile {
    action_profile(bit<32> size);
}

// Writes a uniformly distributed random value between lo and hi, both included, to `result`
// (T is bit<W>, W <= 64; lo and hi need not be constants). Unspecified if lo > hi.
extern void random<T>(out T result, in T lo, in T hi);

// Sends a message carrying `data` (its value at the time of the call) to the control plane,
// as a P4Runtime digest. Ingress only; it cannot be undone. When T is a named struct, its name
// names the digest in P4Info. `receiver` is ignored.
extern void digest<T>(in bit<32> receiver, in T data);

// Algorithms of hash(), checksums and action selectors, computed as BMv2 computes them.
enum HashAlgorithm {
    crc32,        // CRC-32 (IEEE 802.3).
    crc32_custom, // CRC-32 whose parameters the control plane may change; standard by default.
    crc16,        // CRC-16.
    crc16_custom, // CRC-16 whose parameters the control plane may change; standard by default.
    random,       // A random value; the data is ignored.
    identity,     // The data itself, truncated to the result's width.
    csum16,       // The 16-bit ones' complement Internet checksum (RFC 1071).
    xor16,        // The XOR of the data's 16-bit words.
    // koi's extension (not in p4c's v1model.p4 nor in BMv2): the FNV hashes (FNV-1 and
    // FNV-1a; offset basis 0x811c9dc5 / 0xcbf29ce484222325, prime 0x01000193 /
    // 0x100000001b3) over the data's bytes, serialised as for the CRCs (fields MSB-first, the
    // last byte padded with zeros), 32 or 64 bits wide before hash() takes H % max.
    fnv1a_32,     // FNV-1a, 32 bits.
    fnv1a_64,     // FNV-1a, 64 bits.
    fnv1_32,      // FNV-1, 32 bits.
    fnv1_64,      // FNV-1, 64 bits.
    // The same over the data's bytes read as C signed chars, as twemproxy's nc_fnv.c
    // computes them on x86: a byte of 0x80 or more enters sign-extended to the hash's width
    // (0xFFFFFF00 | byte for 32 bits). Equal to the above for bytes below 0x80.
    fnv1a_32_signed,
    fnv1a_64_signed,
    fnv1_32_signed,
    fnv1_64_signed,
    // The key hashes of libmemcached's hashkit as twemproxy computes them on x86-64, 32 bits
    // wide, over the same bytes: Jenkins' one-at-a-time (bytes read as signed chars), the
    // first 4 bytes of MD5 read little-endian, Hsieh's SuperFastHash from 0, MurmurHash2
    // seeded with 0xdeadbeef * length, lookup3's hashlittle with initial value 13.
    hashkit_one_at_a_time,
    hashkit_md5,
    hashkit_hsieh,
    hashkit_murmur,
    hashkit_jenkins
}

// Old form of mark_to_drop(standard_metadata); does the same.
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

// Sets standard_metadata.egress_spec to the drop port 511 and standard_metadata.mcast_grp to
// 0. The packet is dropped at the end of ingress or egress unless later code changes those
// fields again.
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

// Hashes `data` (a tuple of bit<W>, int<W> and varbit fields) with `algo` into H and writes
// base + (H % max) to `result`, or `base` when max is 0. O, T and M are bit<W> types with
// W <= 64, possibly of different widths; base and max need not be constants.
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

// A table implementation (`implementation = <instance>;`) that picks one member of a group:
// the table's `selector` key fields are hashed with `algorithm`, and `outputWidth` bits of the
// hash choose the member. `size` is the number of members.
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

// Where a clone is made: I2E in ingress (the clone goes to egress), E2E in egress.
enum CloneType {
    I2E,
    E2E
}

// Old checksum unit: get(data) returns the 16-bit Internet checksum of `data`.
@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

// ---------------------------------------------------------------------------------------------
// Checksums. `data` is a tuple of bit<W>, int<W> or varbit fields whose total width is a
// multiple of the checksum's width; `algo` must be a compile-time constant.

// In the VerifyChecksum control: when `condition` is true, computes the checksum of `data` with
// `algo` and, if it differs from `checksum`, sets standard_metadata.checksum_error to 1.
extern void verify_checksum<T, O>(in bool condition,
                                  in T data,
                                  in O checksum,
                                  HashAlgorithm algo);

// In the ComputeChecksum control: when `condition` is true, writes the checksum of `data`
// computed with `algo` to `checksum`. It takes effect just before the packet is deparsed.
@pure
extern void update_checksum<T, O>(in bool condition,
                                  in T data,
                                  inout O checksum,
                                  HashAlgorithm algo);

// verify_checksum over `data` followed by the payload: the bytes the parser did not extract.
extern void verify_checksum_with_payload<T, O>(in bool condition,
                                               in T data,
                                               in O checksum,
                                               HashAlgorithm algo);

// update_checksum over `data` followed by the payload: the bytes the parser did not extract.
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition,
                                               in T data,
                                               inout O checksum,
                                               HashAlgorithm algo);

// ---------------------------------------------------------------------------------------------
// Clone, resubmit, recirculate. Each takes effect at the end of the control it is called in and
// cannot be undone; when one is called several times, the last call wins. Preserved fields are
// the user metadata fields annotated @field_list(index) (a field may list several indexes);
// they keep their final values in the new packet instance.

// clone_preserving_field_list with no field preserved.
extern void clone(in CloneType type, in bit<32> session);

// Old form of resubmit_preserving_field_list: preserves the fields listed in `data`.
@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);

// Ingress only: at the end of ingress, the packet as it arrived (not as modified) goes back to
// the parser with instance_type 6, keeping the fields of field list `index`.
extern void resubmit_preserving_field_list(bit<8> index);

// Old form of recirculate_preserving_field_list: preserves the fields listed in `data`.
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);

// Egress only: at the end of egress, the deparsed packet goes back to the parser with
// instance_type 4, keeping the fields of field list `index`.
extern void recirculate_preserving_field_list(bit<8> index);

// Old form of clone_preserving_field_list: preserves the fields listed in `data`.
@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

// Makes copies of the packet for clone session `session`, which the control plane maps to a
// port or a multicast group (no copy if the session is not configured). `type` is I2E in
// ingress and E2E in egress. An I2E clone carries the packet as it entered ingress, is parsed
// again and goes to egress with instance_type 1. An E2E clone carries the packet as it is at
// the end of egress, is not parsed again, and goes through egress again with instance_type 2.
// The original packet goes on as if nothing happened. Fields of field list `index` are kept.
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

// Cuts the packet that leaves the switch to at most `length` bytes (after deparsing).
extern void truncate(in bit<32> length);

// When `check` is false, reports the failure with the source location of the call (BMv2
// simple_switch then exits). Avoid side effects in `check`.
extern void assert(in bool check);

// Same as assert for execution. It exists for formal tools, which take it as an assumption
// about the inputs rather than something to prove.
extern void assume(in bool check);

// Writes `msg` to koi's log. In the second form each `{}` in `msg` is replaced by the next
// element of `data` (a tuple or struct).
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

// ---------------------------------------------------------------------------------------------
// The architecture. H is a struct of headers, header unions and header stacks; M is a struct
// of user metadata.

// Extracts the headers. On an error the packet goes on to VerifyChecksum and ingress with
// standard_metadata.parser_error set; an explicit `transition reject` acts as accept.
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

// Runs after the parser; only verify_checksum and verify_checksum_with_payload calls.
control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

// Ingress processing: tables, actions and externs decide where the packet goes.
@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

// Egress processing, once per packet instance that leaves the traffic manager.
@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

// Runs after egress; only update_checksum and update_checksum_with_payload calls.
control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

// Builds the outgoing packet with packet_out.emit calls; the unparsed payload follows.
@deparser
control Deparser<H>(packet_out b, in H hdr);

// The top-level package; a program instantiates it as `main`.
package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep
                       );

#endif // _V1_MODEL_P4_
