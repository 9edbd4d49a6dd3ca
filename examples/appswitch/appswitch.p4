// AppSwitch: a memcached load balancer inside the switch (v1model).
//
// Clients send memcached requests over UDP to a virtual service address (VIP:11211, the
// `vip` table). The switch hashes each request's key and sends the request to the server
// the key maps to: a pinned key (`pinned`, exact on the key's hashes and length) first,
// else by the pool's distribution (`distribution`): the consistent-hash ring (`ring`, a
// range table over the key's hash, written by the controller as twemproxy's ketama
// continuum), or the hash modulo a number of slots, or a random slot (`slots`, twemproxy's
// modula and random). The request's destination MAC, IPv4 address
// and UDP port become the server's; the IPv4 checksum is recomputed and the UDP checksum
// updated incrementally (a zero UDP checksum, "none", stays zero). Replies from a server
// (`servers`, by source address and port) get the VIP back as their source, so clients see
// one server. The controller's health probes go out through the switch (packet-out) and their
// answers come back to it (`probes`, packet-in). The switch answers ARP requests for the service address itself (`vip_arp`).
// A request the program cannot route (a multi-datagram request, an IP fragment,
// a malformed or truncated header, a command without a key, a key over 250 bytes) goes to
// the `fallback` table (the proxy, or dropped), never to a wrong server. Everything else is
// switched by destination MAC (`l2`; a broadcast, such as an ARP request, or an unknown
// destination goes to multicast group 1, which the controller fills with every port). The
// controller learns where hosts are: a source MAC new on its port is reported by digest
// (`sources`), and ARP answers to the service address, which the controller asks for each
// server, are handed to it (`arp_answers`).
//
// Protocols: the memcached UDP frame header (8 bytes) then the binary protocol (magic 0x80:
// a 24-byte header, extras, then the key; every command with a key is routed: GET, GETQ,
// GETK, GETKQ, SET, ADD, REPLACE, DELETE, INCR, DECR, APPEND, PREPEND, TOUCH, GAT ...) or
// the ASCII protocol (`get`/`gets` of one key, `set`, `add`, `replace`, `append`, `prepend`,
// `cas`, `delete`, `incr`, `decr`, `touch`: the key is the second word; ascii_parser.p4,
// written by gen_ascii_parser.py, finds where it ends).
//
// The key's hash is CRC-32 (IEEE, as zlib) over its bytes; `hash_mode` says what the ring is
// indexed by: the CRC itself (twemproxy's `crc32a`), its bits 30..16 (twemproxy's
// `crc32`, which keeps 15 bits), twemproxy's `crc16` (see `hash_crc16`), or an FNV hash of
// the key (twemproxy's `fnv1a_64`, `fnv1_64`, `fnv1a_32`, `fnv1_32`, over the bytes read as
// signed chars as twemproxy reads them; koi's HashAlgorithm extension, see `hash_fnv1a_64`),
// or one of twemproxy's hashkit hashes (`md5`, `murmur`, `jenkins`, `hsieh`,
// `one_at_a_time`, see `hash_md5`).

#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP = 0x0806;
const bit<8>  PROTO_UDP = 17;
const bit<16> MEMCACHED_PORT = 11211;
const bit<8>  MAGIC_REQUEST = 0x80;
// The port koi run's --cpu-port names: packets to and from the controller.
const bit<9>  CPU_PORT = 255;
// Twemproxy's distributions: the consistent-hash ring, the hash modulo the number of slots,
// a random slot.
const bit<2>  DIST_KETAMA = 0;
const bit<2>  DIST_MODULA = 1;
const bit<2>  DIST_RANDOM = 2;

// A frame the controller sends out of a port (its health probes)...
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> pad; }
// ... and one the switch hands it (the probes' answers).
@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> pad; }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> total_len; bit<16> id;
    bit<3> flags; bit<13> frag_offset; bit<8> ttl; bit<8> protocol; bit<16> checksum;
    bit<32> src; bit<32> dst;
}
header ipv4_options_t { varbit<320> options; }
// ARP for IPv4 over Ethernet.
header arp_t {
    bit<16> htype; bit<16> ptype; bit<8> hlen; bit<8> plen; bit<16> op;
    bit<48> sha; bit<32> spa; bit<48> tha; bit<32> tpa;
}
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> checksum; }
// memcached's UDP frame header.
header mc_frame_t { bit<16> request_id; bit<16> seq; bit<16> datagrams; bit<16> reserved; }
// The binary protocol's request header.
header mc_binary_t {
    bit<8> magic; bit<8> opcode; bit<16> key_len; bit<8> extras_len; bit<8> data_type;
    bit<16> vbucket; bit<32> body_len; bit<32> opaque; bit<64> cas;
}
header mc_extras_t { varbit<160> data; }
// The ASCII protocol's command word and its space ("get ", "delete ", ...).
header mc_ascii_cmd_t { varbit<64> cmd; }
// The key: all but its last two bytes, then those two (a key of one byte has only the last).
// Twemproxy's `crc16` needs the CRCs of the key's two prefixes one and two bytes shorter.
header mc_key_t { varbit<2000> key; }
header mc_key_byte_t { bit<8> b; }

struct headers_t {
    packet_in_t packet_in;
    packet_out_t packet_out;
    ethernet_t ethernet;
    arp_t arp;
    ipv4_t ipv4;
    ipv4_options_t ipv4_options;
    udp_t udp;
    mc_frame_t mc_frame;
    mc_binary_t mc_binary;
    mc_ascii_cmd_t mc_ascii_cmd;
    mc_extras_t mc_extras;
    mc_key_t mc_key;
    mc_key_byte_t mc_key_t2;   // the key's last byte but one
    mc_key_byte_t mc_key_t1;   // the key's last byte
}

// What a frame from a source the switch does not know yet tells the controller (L2 learning).
struct learn_t {
    bit<48> src;
    bit<9>  port;
}

struct metadata_t {
    // The parse found a request it can route (one datagram, a whole binary header with a
    // key of 1..250 bytes); else `unroutable` says why not.
    bool routable;
    bool unroutable;
    bit<32> crc;      // CRC-32 of the key
    bit<16> crc16;    // a second hash of the key, for pinned keys
    bit<32> point;    // where the key falls on the ring
    bit<2>  dist;     // the distribution: DIST_KETAMA, DIST_MODULA or DIST_RANDOM
    bit<32> nslots;   // modula/random: how many slots the live servers fill
    bit<32> slot;     // modula/random: the slot the request goes to
    bit<16> key_len;  // the key's length in bytes
    bool ascii_get;   // an ASCII get/gets (one key per routable request)
}

parser AppParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            CPU_PORT: from_controller;
            default: ethernet;
        }
    }
    state from_controller {
        pkt.extract(hdr.packet_out);
        transition accept;
    }
    state ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: ipv4;
            ETHERTYPE_ARP: arp;
            default: accept;
        }
    }
    state arp {
        pkt.extract(hdr.arp);
        transition accept;
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl) {
            5: ipv4_payload;
            6 &&& 0xe: ipv4_options;   // 6, 7
            8 &&& 0x8: ipv4_options;   // 8 .. 15
            default: accept;           // ihl below 5: not a usable header
        }
    }
    state ipv4_options {
        pkt.extract(hdr.ipv4_options, ((bit<32>) hdr.ipv4.ihl - 5) * 32);
        transition ipv4_payload;
    }
    state ipv4_payload {
        // Only a whole datagram (not a fragment) has the UDP header where it is expected.
        transition select(hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, 0, PROTO_UDP): udp;
            default: accept;
        }
    }
    state udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dport) {
            MEMCACHED_PORT: memcached;
            default: accept;
        }
    }
    state memcached {
        meta.unroutable = true;   // until the parse says otherwise
        pkt.extract(hdr.mc_frame);
        // One datagram: sequence number 0 of 1.
        transition select(hdr.mc_frame.seq, hdr.mc_frame.datagrams, pkt.lookahead<bit<8>>()) {
            (0, 1, MAGIC_REQUEST): binary;
            (0, 1, _): ascii;
            default: accept;
        }
    }
#include "ascii_parser.p4"

    state binary {
        pkt.extract(hdr.mc_binary);
        transition select(hdr.mc_binary.extras_len) {
            0: binary_key;
            1 .. 20: binary_extras;
            default: accept;   // more extras than any command has
        }
    }
    state binary_extras {
        pkt.extract(hdr.mc_extras, (bit<32>) hdr.mc_binary.extras_len * 8);
        transition binary_key;
    }
    state binary_key {
        transition select(hdr.mc_binary.key_len) {
            1 .. 250: binary_key_bytes;
            default: accept;   // no key, or longer than memcached allows
        }
    }
    state binary_key_bytes {
        meta.key_len = hdr.mc_binary.key_len;
        transition select(hdr.mc_binary.key_len) {
            1: key_last;
            default: binary_key_head;
        }
    }
    state binary_key_head {
        pkt.extract(hdr.mc_key, ((bit<32>) hdr.mc_binary.key_len - 2) * 8);
        transition key_last_two;
    }
    // The key's last two bytes (or its only one), for either protocol.
    state key_last_two {
        pkt.extract(hdr.mc_key_t2);
        transition key_last;
    }
    state key_last {
        pkt.extract(hdr.mc_key_t1);
        transition select(hdr.mc_binary.isValid()) {
            true: routable;
            false: ascii_after_key;
        }
    }
    state routable {
        meta.routable = true;
        meta.unroutable = false;
        transition accept;
    }
}

control AppVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control AppIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std) {
    // The UDP checksum's incremental update (RFC 1624) for a 32-bit and a 16-bit field
    // that change from (a, p) to (b, q). A zero checksum (none) stays zero.
    action udp_checksum_update(bit<32> a, bit<32> b, bit<16> p, bit<16> q) {
        bit<32> sum = (bit<32>) (~hdr.udp.checksum)
            + (bit<32>) (~a[31:16]) + (bit<32>) (~a[15:0])
            + (bit<32>) b[31:16] + (bit<32>) b[15:0]
            + (bit<32>) (~p) + (bit<32>) q;
        sum = (bit<32>) sum[15:0] + (bit<32>) sum[31:16];
        sum = (bit<32>) sum[15:0] + (bit<32>) sum[31:16];
        bit<16> c = ~sum[15:0];
        // 0 means "no checksum" on the wire: a computed 0 is sent as 0xffff.
        hdr.udp.checksum = (hdr.udp.checksum == 0) ? 16w0 : ((c == 0) ? 16w0xffff : c);
    }

    action drop() { mark_to_drop(std); }

    // A request for the service: route it by its key.
    action to_server(bit<48> mac, bit<32> ip, bit<16> port, bit<9> egress) {
        udp_checksum_update(hdr.ipv4.dst, ip, hdr.udp.dport, port);
        hdr.ethernet.dst = mac;
        hdr.ipv4.dst = ip;
        hdr.udp.dport = port;
        std.egress_spec = egress;
    }

    // The service's address and port (the controller writes the pool's `listen`).
    table vip {
        key = { hdr.ipv4.dst: exact; hdr.udp.dport: exact; }
        actions = { NoAction; }
        default_action = NoAction();
        size = 16;
    }

    // Twemproxy's hash variants: over the key's CRC-32, or its `crc16`. That one keeps a
    // 32-bit register through a CRC-16/XMODEM table, so its value is the XMODEM CRC of the
    // key, with the top bytes of the CRCs of the key one byte shorter (bits 23..16) and two
    // bytes shorter (bits 31..24) above it. The three CRCs are `crc16_custom` calculations
    // that the controller sets to XMODEM (polynomial 0x1021, initial value 0, no
    // reflection, no final XOR; `koi ctl set_crc16_parameters`).
    action hash_crc32a() { meta.point = meta.crc; }
    action hash_crc32() { meta.point = (bit<32>) meta.crc[30:16]; }
    action hash_crc16() {
        bit<16> shorter2;
        bit<16> shorter1;
        bit<16> whole;
        hash(shorter2, HashAlgorithm.crc16_custom, 16w0, { hdr.mc_key.key }, 32w0x10000);
        hash(shorter1, HashAlgorithm.crc16_custom, 16w0, { hdr.mc_key.key, hdr.mc_key_t2.b },
             32w0x10000);
        hash(whole, HashAlgorithm.crc16_custom, 16w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 32w0x10000);
        meta.point = shorter2[15:8] ++ shorter1[15:8] ++ whole;
    }
    // Twemproxy's FNV hashes. Its 64-bit ones keep the low 32 bits of 64-bit FNV: the
    // remainder by 2^32. Twemproxy reads each key byte as a C char, signed on x86: the
    // `_signed` members of koi's HashAlgorithm extension hash the bytes that way, so a key
    // with a byte of 0x80 or more lands where twemproxy places it too.
    action hash_fnv1a_64() {
        hash(meta.point, HashAlgorithm.fnv1a_64_signed, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    action hash_fnv1_64() {
        hash(meta.point, HashAlgorithm.fnv1_64_signed, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    action hash_fnv1a_32() {
        hash(meta.point, HashAlgorithm.fnv1a_32_signed, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    action hash_fnv1_32() {
        hash(meta.point, HashAlgorithm.fnv1_32_signed, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    // Twemproxy's other hashes (libmemcached's hashkit), as koi's HashAlgorithm extension
    // computes them the way twemproxy does on x86-64.
    action hash_md5() {
        hash(meta.point, HashAlgorithm.hashkit_md5, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    action hash_murmur() {
        hash(meta.point, HashAlgorithm.hashkit_murmur, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    action hash_jenkins() {
        hash(meta.point, HashAlgorithm.hashkit_jenkins, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    action hash_hsieh() {
        hash(meta.point, HashAlgorithm.hashkit_hsieh, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    action hash_one_at_a_time() {
        hash(meta.point, HashAlgorithm.hashkit_one_at_a_time, 32w0,
             { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
    }
    table hash_mode {
        actions = {
            hash_crc32a; hash_crc32; hash_crc16;
            hash_fnv1a_64; hash_fnv1_64; hash_fnv1a_32; hash_fnv1_32;
            hash_md5; hash_murmur; hash_jenkins; hash_hsieh; hash_one_at_a_time;
        }
        default_action = hash_crc32a();
    }

    // The service's address alone, for IP fragments (whose UDP ports are not in every
    // fragment): a fragmented request is not routed.
    table vip_address {
        key = { hdr.ipv4.dst: exact; }
        actions = { NoAction; }
        default_action = NoAction();
        size = 16;
    }

    // Hot keys placed by the controller (by the key's two hashes and its length); wins over
    // the ring.
    table pinned {
        key = {
            meta.crc: exact;
            meta.crc16: exact;
            meta.key_len: exact;
        }
        actions = { to_server; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    // The consistent-hash ring: each range of points to the server that owns it.
    table ring {
        key = { meta.point: range; }
        actions = { to_server; NoAction; }
        default_action = NoAction();
        size = 16384;
    }

    // How the pool distributes keys: twemproxy's `ketama` (the `ring` table), `modula` (the
    // point modulo the number of slots, then `slots`) or `random` (a random slot). For
    // modula, each live server fills as many consecutive slots as its weight; for random,
    // one slot each (twemproxy ignores weights there).
    action dist_ketama() { meta.dist = DIST_KETAMA; }
    action dist_modula(bit<32> nslots) { meta.dist = DIST_MODULA; meta.nslots = nslots; }
    action dist_random(bit<32> nslots) { meta.dist = DIST_RANDOM; meta.nslots = nslots; }
    table distribution {
        actions = { dist_ketama; dist_modula; dist_random; }
        default_action = dist_ketama();
    }

    // The modula/random slots: each to the server that owns it.
    table slots {
        key = { meta.slot: exact; }
        actions = { to_server; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    // Where a request the switch cannot route goes: the proxy, or nowhere.
    table fallback {
        actions = { to_server; drop; }
        default_action = drop();
        size = 1;
    }

    // Replies from a server get the service's address as their source.
    action from_server(bit<48> vip_mac, bit<32> vip_ip, bit<16> vip_port) {
        udp_checksum_update(hdr.ipv4.src, vip_ip, hdr.udp.sport, vip_port);
        hdr.ethernet.src = vip_mac;
        hdr.ipv4.src = vip_ip;
        hdr.udp.sport = vip_port;
    }
    table servers {
        key = { hdr.ipv4.src: exact; hdr.udp.sport: exact; }
        actions = { from_server; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    // The answers to the controller's health probes (sent from the service address and a
    // port of the controller's) go to the controller.
    action to_controller() {
        std.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = std.ingress_port;
    }
    table probes {
        key = { hdr.ipv4.dst: exact; hdr.udp.dport: exact; }
        actions = { to_controller; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    // Everything else: switched by destination MAC, an unknown one flooded.
    action forward(bit<9> port) { std.egress_spec = port; }
    action flood() { std.mcast_grp = 1; }
    table l2 {
        key = { hdr.ethernet.dst: exact; }
        actions = { forward; flood; drop; }
        default_action = flood();
        size = 4096;
    }

    // L2 learning: a source MAC not known on the port it came from is reported to the
    // controller (digest `learn_t`), which writes it into `l2` and here.
    action learn() { digest<learn_t>(1, { hdr.ethernet.src, std.ingress_port }); }
    table sources {
        key = { hdr.ethernet.src: exact; std.ingress_port: exact; }
        actions = { learn; NoAction; }
        default_action = learn();
        size = 4096;
    }

    // Answers to the controller's ARP requests for the servers' addresses (sent from the
    // service address) go to the controller: that is how it finds where each server is.
    table arp_answers {
        key = { hdr.arp.tpa: exact; }
        actions = { to_controller; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    // The switch answers "who has the service address?" with the service's MAC.
    action arp_reply(bit<48> vip_mac) {
        hdr.ethernet.dst = hdr.arp.sha;
        hdr.ethernet.src = vip_mac;
        hdr.arp.op = 2;
        hdr.arp.tha = hdr.arp.sha;
        bit<32> asker = hdr.arp.spa;
        hdr.arp.sha = vip_mac;
        hdr.arp.spa = hdr.arp.tpa;
        hdr.arp.tpa = asker;
        std.egress_spec = std.ingress_port;
    }
    table vip_arp {
        key = { hdr.arp.tpa: exact; }
        actions = { arp_reply; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            return;
        }
        if (hdr.ethernet.src[40:40] == 0) {
            sources.apply();
        }
        if (hdr.arp.isValid() && hdr.arp.op == 2 && arp_answers.apply().hit) {
            return;
        }
        if (hdr.arp.isValid() && hdr.arp.op == 1 && vip_arp.apply().hit) {
            return;
        }
        if (hdr.udp.isValid() && probes.apply().hit) {
            return;
        }
        if (hdr.udp.isValid() && vip.apply().hit) {
            if (meta.routable && std.parser_error == error.NoError
                    && (!hdr.mc_binary.isValid()
                        || hdr.mc_binary.body_len >= (bit<32>) hdr.mc_binary.key_len
                                                     + (bit<32>) hdr.mc_binary.extras_len)) {
                hash(meta.crc, HashAlgorithm.crc32, 32w0,
                     { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 64w0x100000000);
                hash(meta.crc16, HashAlgorithm.crc16, 16w0,
                     { hdr.mc_key.key, hdr.mc_key_t2.b, hdr.mc_key_t1.b }, 32w0x10000);
                hash_mode.apply();
                if (!pinned.apply().hit) {
                    distribution.apply();
                    if (meta.dist == DIST_KETAMA) {
                        if (!ring.apply().hit) {
                            fallback.apply();
                        }
                    } else {
                        if (meta.dist == DIST_MODULA) {
                            // The point modulo the slots (`identity` hands the point to
                            // `hash`, whose remainder by `max` is the modulo).
                            hash(meta.slot, HashAlgorithm.identity, 32w0, { meta.point },
                                 meta.nslots);
                        } else {
                            random(meta.slot, 32w0, meta.nslots - 1);
                        }
                        if (!slots.apply().hit) {
                            fallback.apply();
                        }
                    }
                }
            } else {
                fallback.apply();
            }
        } else {
            if (hdr.udp.isValid()) {
                servers.apply();
            } else if (hdr.ipv4.isValid() && (hdr.ipv4.flags[0:0] == 1 || hdr.ipv4.frag_offset != 0)
                       && vip_address.apply().hit) {
                fallback.apply();
            }
            if (std.egress_spec == 0) {
                l2.apply();
            }
        }
    }
}

control AppEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std) {
    apply {
        // A flooded copy does not go back where the frame came from.
        if (std.instance_type == 5 && std.egress_port == std.ingress_port) {
            mark_to_drop(std);
        }
    }
}

control AppChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl > 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4_options.options },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control AppDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.mc_frame);
        pkt.emit(hdr.mc_binary);
        pkt.emit(hdr.mc_ascii_cmd);
        pkt.emit(hdr.mc_extras);
        pkt.emit(hdr.mc_key);
        pkt.emit(hdr.mc_key_t2);
        pkt.emit(hdr.mc_key_t1);
    }
}

V1Switch(AppParser(), AppVerify(), AppIngress(), AppEgress(), AppChecksum(), AppDeparser()) main;
