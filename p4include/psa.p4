// SPDX-License-Identifier: Apache-2.0
//
// koi's psa.p4: the Portable Switch Architecture (P4.org PSA 1.2), built into the koi binary
// and used for `#include <psa.p4>` and `#include <bmv2/psa.p4>`.
//
// The declarations are compatible with p4c's bmv2/psa.p4 (same names, type parameters,
// parameter names and directions, annotations and order), so that a program written for
// p4c's PSA back ends compiles unchanged with koi. The comments describe what koi does; its
// semantics are those of BMv2's psa_switch.
//
// A packet from a port goes IngressParser, Ingress, IngressDeparser; then the packet
// replication engine: an ingress-to-egress clone if ostd.clone (the packet as it was received,
// to every copy of clone session ostd.clone_session_id); nothing more if ostd.drop (true when
// Ingress starts); a resubmission if ostd.resubmit (the packet as it was received, back to
// IngressParser with resubmit_meta); else one copy per replica of ostd.multicast_group if it is
// not 0, else one copy to ostd.egress_port. Each copy goes EgressParser (over the bytes the
// IngressDeparser emitted, followed by the unparsed payload), Egress, EgressDeparser; then an
// egress-to-egress clone if ostd.clone (the deparsed packet), a drop if ostd.drop, a
// recirculation if the egress port is PSA_PORT_RECIRCULATE, else the packet leaves on it.

#ifndef __PSA_P4__
#define __PSA_P4__

// The data plane's widths of the PSA types (BMv2's).
typedef bit<32> PortIdUint_t;
typedef bit<32> MulticastGroupUint_t;
typedef bit<16> CloneSessionIdUint_t;
typedef bit<8>  ClassOfServiceUint_t;
typedef bit<16> PacketLengthUint_t;
typedef bit<16> EgressInstanceUint_t;
typedef bit<64> TimestampUint_t;

@p4runtime_translation("p4.org/psa/v1/PortId_t", 32)
type PortIdUint_t         PortId_t;
@p4runtime_translation("p4.org/psa/v1/MulticastGroup_t", 32)
type MulticastGroupUint_t MulticastGroup_t;
@p4runtime_translation("p4.org/psa/v1/CloneSessionId_t", 16)
type CloneSessionIdUint_t CloneSessionId_t;
@p4runtime_translation("p4.org/psa/v1/ClassOfService_t", 8)
type ClassOfServiceUint_t ClassOfService_t;
@p4runtime_translation("p4.org/psa/v1/PacketLength_t", 16)
type PacketLengthUint_t   PacketLength_t;
@p4runtime_translation("p4.org/psa/v1/EgressInstance_t", 16)
type EgressInstanceUint_t EgressInstance_t;
@p4runtime_translation("p4.org/psa/v1/Timestamp_t", 64)
type TimestampUint_t      Timestamp_t;
typedef error   ParserError_t;

// A packet sent to this port goes back to IngressParser after EgressDeparser.
const PortId_t PSA_PORT_RECIRCULATE = (PortId_t) 0xfffffffa;
// The port of the control plane.
const PortId_t PSA_PORT_CPU = (PortId_t) 0xfffffffd;
const CloneSessionId_t PSA_CLONE_SESSION_TO_CPU = (CloneSessionId_t) 0;

// The same types as carried in packet headers.
typedef bit<32> PortIdInHeaderUint_t;
typedef bit<32> MulticastGroupInHeaderUint_t;
typedef bit<16> CloneSessionIdInHeaderUint_t;
typedef bit<8>  ClassOfServiceInHeaderUint_t;
typedef bit<16> PacketLengthInHeaderUint_t;
typedef bit<16> EgressInstanceInHeaderUint_t;
typedef bit<64> TimestampInHeaderUint_t;

@p4runtime_translation("p4.org/psa/v1/PortIdInHeader_t", 32)
type  PortIdInHeaderUint_t         PortIdInHeader_t;
@p4runtime_translation("p4.org/psa/v1/MulticastGroupInHeader_t", 32)
type  MulticastGroupInHeaderUint_t MulticastGroupInHeader_t;
@p4runtime_translation("p4.org/psa/v1/CloneSessionIdInHeader_t", 16)
type  CloneSessionIdInHeaderUint_t CloneSessionIdInHeader_t;
@p4runtime_translation("p4.org/psa/v1/ClassOfServiceInHeader_t", 8)
type  ClassOfServiceInHeaderUint_t ClassOfServiceInHeader_t;
@p4runtime_translation("p4.org/psa/v1/PacketLengthInHeader_t", 16)
type  PacketLengthInHeaderUint_t   PacketLengthInHeader_t;
@p4runtime_translation("p4.org/psa/v1/EgressInstanceInHeader_t", 16)
type  EgressInstanceInHeaderUint_t EgressInstanceInHeader_t;
@p4runtime_translation("p4.org/psa/v1/TimestampInHeader_t", 64)
type  TimestampInHeaderUint_t      TimestampInHeader_t;

// Conversions between the header and the data-plane forms (the same widths in koi).
PortId_t psa_PortId_header_to_int (in PortIdInHeader_t x) {
    return (PortId_t) (PortIdUint_t) (PortIdInHeaderUint_t) x;
}
MulticastGroup_t psa_MulticastGroup_header_to_int (in MulticastGroupInHeader_t x) {
    return (MulticastGroup_t) (MulticastGroupUint_t) (MulticastGroupInHeaderUint_t) x;
}
CloneSessionId_t psa_CloneSessionId_header_to_int (in CloneSessionIdInHeader_t x) {
    return (CloneSessionId_t) (CloneSessionIdUint_t) (CloneSessionIdInHeaderUint_t) x;
}
ClassOfService_t psa_ClassOfService_header_to_int (in ClassOfServiceInHeader_t x) {
    return (ClassOfService_t) (ClassOfServiceUint_t) (ClassOfServiceInHeaderUint_t) x;
}
PacketLength_t psa_PacketLength_header_to_int (in PacketLengthInHeader_t x) {
    return (PacketLength_t) (PacketLengthUint_t) (PacketLengthInHeaderUint_t) x;
}
EgressInstance_t psa_EgressInstance_header_to_int (in EgressInstanceInHeader_t x) {
    return (EgressInstance_t) (EgressInstanceUint_t) (EgressInstanceInHeaderUint_t) x;
}
Timestamp_t psa_Timestamp_header_to_int (in TimestampInHeader_t x) {
    return (Timestamp_t) (TimestampUint_t) (TimestampInHeaderUint_t) x;
}
PortIdInHeader_t psa_PortId_int_to_header (in PortId_t x) {
    return (PortIdInHeader_t) (PortIdInHeaderUint_t) (PortIdUint_t) x;
}
MulticastGroupInHeader_t psa_MulticastGroup_int_to_header (in MulticastGroup_t x) {
    return (MulticastGroupInHeader_t) (MulticastGroupInHeaderUint_t) (MulticastGroupUint_t) x;
}
CloneSessionIdInHeader_t psa_CloneSessionId_int_to_header (in CloneSessionId_t x) {
    return (CloneSessionIdInHeader_t) (CloneSessionIdInHeaderUint_t) (CloneSessionIdUint_t) x;
}
ClassOfServiceInHeader_t psa_ClassOfService_int_to_header (in ClassOfService_t x) {
    return (ClassOfServiceInHeader_t) (ClassOfServiceInHeaderUint_t) (ClassOfServiceUint_t) x;
}
PacketLengthInHeader_t psa_PacketLength_int_to_header (in PacketLength_t x) {
    return (PacketLengthInHeader_t) (PacketLengthInHeaderUint_t) (PacketLengthUint_t) x;
}
EgressInstanceInHeader_t psa_EgressInstance_int_to_header (in EgressInstance_t x) {
    return (EgressInstanceInHeader_t) (EgressInstanceInHeaderUint_t) (EgressInstanceUint_t) x;
}
TimestampInHeader_t psa_Timestamp_int_to_header (in Timestamp_t x) {
    return (TimestampInHeader_t) (TimestampInHeaderUint_t) (TimestampUint_t) x;
}

// The table property psa_idle_timeout: NOTIFY_CONTROL makes the table's entries age (P4Runtime
// idle timeouts, as v1model's support_timeout).
enum PSA_IdleTimeout_t {
  NO_TIMEOUT,
  NOTIFY_CONTROL
};

// How a packet came to the block that sees packet_path.
enum PSA_PacketPath_t {
    NORMAL,           // from a port (ingress)
    NORMAL_UNICAST,   // from ingress, one copy (egress)
    NORMAL_MULTICAST, // from ingress, a copy of a multicast group (egress)
    CLONE_I2E,        // a clone made at the end of ingress (egress)
    CLONE_E2E,        // a clone made at the end of egress (egress)
    RESUBMIT,         // resubmitted at the end of ingress (ingress)
    RECIRCULATE       // recirculated at the end of egress (ingress)
}

struct psa_ingress_parser_input_metadata_t {
  PortId_t                 ingress_port;
  PSA_PacketPath_t         packet_path;
}

struct psa_egress_parser_input_metadata_t {
  PortId_t                 egress_port;
  PSA_PacketPath_t         packet_path;
}

struct psa_ingress_input_metadata_t {
  PortId_t                 ingress_port;
  PSA_PacketPath_t         packet_path;
  Timestamp_t              ingress_timestamp;   // microseconds
  ParserError_t            parser_error;
}

// The values when Ingress starts: class_of_service 0, clone false, clone_session_id 0,
// drop true, resubmit false, multicast_group 0, egress_port 0.
struct psa_ingress_output_metadata_t {
  ClassOfService_t         class_of_service;
  bool                     clone;
  CloneSessionId_t         clone_session_id;
  bool                     drop;
  bool                     resubmit;
  MulticastGroup_t         multicast_group;
  PortId_t                 egress_port;
}

struct psa_egress_input_metadata_t {
  ClassOfService_t         class_of_service;
  PortId_t                 egress_port;
  PSA_PacketPath_t         packet_path;
  EgressInstance_t         instance;         // a multicast or clone copy's replica id
  Timestamp_t              egress_timestamp; // microseconds
  ParserError_t            parser_error;
}

struct psa_egress_deparser_input_metadata_t {
  PortId_t                 egress_port;
}

// The values when Egress starts: clone false, clone_session_id 0, drop false.
struct psa_egress_output_metadata_t {
  bool                     clone;
  CloneSessionId_t         clone_session_id;
  bool                     drop;
}

// What the IngressDeparser may ask about the packet it deparses: whether an ingress clone is
// made (istd.clone: clone_i2e_meta is then used), whether it is resubmitted (!istd.drop &&
// istd.resubmit: resubmit_meta), whether it goes to egress as unicast or multicast
// (!istd.drop && !istd.resubmit: normal_meta).
@pure
extern bool psa_clone_i2e(in psa_ingress_output_metadata_t istd);
@pure
extern bool psa_resubmit(in psa_ingress_output_metadata_t istd);
@pure
extern bool psa_normal(in psa_ingress_output_metadata_t istd);
// The same for the EgressDeparser: an egress clone (istd.clone: clone_e2e_meta), a
// recirculation (!istd.drop && edstd.egress_port == PSA_PORT_RECIRCULATE: recirculate_meta).
@pure
extern bool psa_clone_e2e(in psa_egress_output_metadata_t istd);
@pure
extern bool psa_recirculate(in psa_egress_output_metadata_t istd,
                            in psa_egress_deparser_input_metadata_t edstd);

// A false check stops the packet's processing; koi counts and reports it.
extern void assert(in bool check);
extern void assume(in bool check);

match_kind {
    range,    // value in [low, high]
    selector, // an action selector's hash input
    optional  // exact value or wildcard
}

// Sends the packet to one port at the end of ingress.
@noWarn("unused")
action send_to_port(inout psa_ingress_output_metadata_t meta,
                    in PortId_t egress_port)
{
    meta.drop = false;
    meta.multicast_group = (MulticastGroup_t) 0;
    meta.egress_port = egress_port;
}

// Sends one copy per replica of a multicast group (koi ctl mc_* commands configure them).
@noWarn("unused")
action multicast(inout psa_ingress_output_metadata_t meta,
                 in MulticastGroup_t multicast_group)
{
    meta.drop = false;
    meta.multicast_group = multicast_group;
}

@noWarn("unused")
action ingress_drop(inout psa_ingress_output_metadata_t meta)
{
    meta.drop = true;
}

@noWarn("unused")
action egress_drop(inout psa_egress_output_metadata_t meta)
{
    meta.drop = true;
}

// The replication engine (multicast groups, clone sessions) and the queues: configured by
// the control plane only.
extern PacketReplicationEngine {
    PacketReplicationEngine();
}

extern BufferingQueueingEngine {
    BufferingQueueingEngine();
}

// Hash, checksum and action selector algorithms (in koi the custom CRCs of Hash and Checksum
// have BMv2's default parameters; TARGET_DEFAULT is CRC32).
enum PSA_HashAlgorithm_t {
  IDENTITY,
  CRC32,
  CRC32_CUSTOM,
  CRC16,
  CRC16_CUSTOM,
  ONES_COMPLEMENT16,
  TARGET_DEFAULT
}

// get_hash(data): the algorithm over data, cut to O. get_hash(base, data, max):
// base + (hash % max), or base when max is 0.
extern Hash<O> {
  Hash(PSA_HashAlgorithm_t algo);
  @pure
  O get_hash<D>(in D data);
  @pure
  O get_hash<T, D>(in T base, in D data, in T max);
}

// A checksum computed over the data given since the last clear() (each packet starts clear).
extern Checksum<W> {
  Checksum(PSA_HashAlgorithm_t hash);
  void clear();
  void update<T>(in T data);
  @noSideEffects
  W    get();
}

// The Internet checksum (RFC 1071) with incremental updates (RFC 1624): add and subtract
// 16-bit words; get() is the checksum, get_state() the ones' complement sum.
extern InternetChecksum {
  InternetChecksum();
  void clear();
  void add<T>(in T data);
  void subtract<T>(in T data);
  @noSideEffects
  bit<16> get();
  @noSideEffects
  bit<16> get_state();
  void set_state(in bit<16> checksum_state);
}

enum PSA_CounterType_t {
    PACKETS,
    BYTES,
    PACKETS_AND_BYTES
}

// n_counters counters of W bits each, indexed by S (counter_read/counter_write in koi ctl).
@noWarn("unused")
extern Counter<W, S> {
  Counter(bit<32> n_counters, PSA_CounterType_t type);
  void count(in S index);
}

// A counter per entry of the table whose psa_direct_counter it is.
@noWarn("unused")
extern DirectCounter<W> {
  DirectCounter(PSA_CounterType_t type);
  void count();
}

enum PSA_MeterType_t {
    PACKETS,
    BYTES
}

enum PSA_MeterColor_t { RED, GREEN, YELLOW }

// Two-rate three-colour meters (RFC 2698), configured with meter_set_rates; an unconfigured
// meter is GREEN. koi does not use the colour-aware form's input colour.
extern Meter<S> {
  Meter(bit<32> n_meters, PSA_MeterType_t type);
  PSA_MeterColor_t execute(in S index, in PSA_MeterColor_t color);
  PSA_MeterColor_t execute(in S index);
}

// A meter per entry of the table whose psa_direct_meter it is.
extern DirectMeter {
  DirectMeter(PSA_MeterType_t type);
  PSA_MeterColor_t execute(in PSA_MeterColor_t color);
  PSA_MeterColor_t execute();
}

// size values of type T indexed by S, 0 (or initial_value) until written.
extern Register<T, S> {
  Register(bit<32> size);
  Register(bit<32> size, T initial_value);
  @noSideEffects
  T    read  (in S index);
  void write (in S index, in T value);
}

// A uniform random value in [min, max] (koi's seeded generator).
extern Random<T> {
  Random(T min, T max);
  T read();
}

// Table implementations: members (ActionProfile), members and groups whose member is chosen
// by hashing the table's selector keys (ActionSelector).
extern ActionProfile {
  ActionProfile(bit<32> size);
}

extern ActionSelector {
  ActionSelector(PSA_HashAlgorithm_t algo, bit<32> size, bit<32> outputWidth);
}

// pack(data) in the IngressDeparser sends data to the control plane (P4Runtime digests).
extern Digest<T> {
  Digest();
  void pack(in T data);
}

// The programmable blocks.
parser IngressParser<H, M, RESUBM, RECIRCM>(
    packet_in buffer,
    out H parsed_hdr,
    inout M user_meta,
    in psa_ingress_parser_input_metadata_t istd,
    in RESUBM resubmit_meta,
    in RECIRCM recirculate_meta);

control Ingress<H, M>(
    inout H hdr, inout M user_meta,
    in    psa_ingress_input_metadata_t  istd,
    inout psa_ingress_output_metadata_t ostd);

control IngressDeparser<H, M, CI2EM, RESUBM, NM>(
    packet_out buffer,
    out CI2EM clone_i2e_meta,
    out RESUBM resubmit_meta,
    out NM normal_meta,
    inout H hdr,
    in M meta,
    in psa_ingress_output_metadata_t istd);

parser EgressParser<H, M, NM, CI2EM, CE2EM>(
    packet_in buffer,
    out H parsed_hdr,
    inout M user_meta,
    in psa_egress_parser_input_metadata_t istd,
    in NM normal_meta,
    in CI2EM clone_i2e_meta,
    in CE2EM clone_e2e_meta);

control Egress<H, M>(
    inout H hdr, inout M user_meta,
    in    psa_egress_input_metadata_t  istd,
    inout psa_egress_output_metadata_t ostd);

control EgressDeparser<H, M, CE2EM, RECIRCM>(
    packet_out buffer,
    out CE2EM clone_e2e_meta,
    out RECIRCM recirculate_meta,
    inout H hdr,
    in M meta,
    in psa_egress_output_metadata_t istd,
    in psa_egress_deparser_input_metadata_t edstd);

package IngressPipeline<IH, IM, NM, CI2EM, RESUBM, RECIRCM>(
    IngressParser<IH, IM, RESUBM, RECIRCM> ip,
    Ingress<IH, IM> ig,
    IngressDeparser<IH, IM, CI2EM, RESUBM, NM> id);

package EgressPipeline<EH, EM, NM, CI2EM, CE2EM, RECIRCM>(
    EgressParser<EH, EM, NM, CI2EM, CE2EM> ep,
    Egress<EH, EM> eg,
    EgressDeparser<EH, EM, CE2EM, RECIRCM> ed);

package PSA_Switch<IH, IM, EH, EM, NM, CI2EM, CE2EM, RESUBM, RECIRCM> (
    IngressPipeline<IH, IM, NM, CI2EM, RESUBM, RECIRCM> ingress,
    PacketReplicationEngine pre,
    EgressPipeline<EH, EM, NM, CI2EM, CE2EM, RECIRCM> egress,
    BufferingQueueingEngine bqe);

#endif  // __PSA_P4__
