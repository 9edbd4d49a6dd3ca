// SPDX-License-Identifier: Apache-2.0
//
// koi's ebpf_model.p4: the packet filter model of p4c's eBPF back end, built into the koi
// binary and used for `#include <ebpf_model.p4>`.
//
// The declarations are compatible with p4c's ebpf_model.p4 of the same name, so that a
// program written for p4c compiles unchanged with koi. The comments describe what koi does;
// its semantics are those of p4c's eBPF test target.
//
// A packet goes through the ebpfFilter package's two blocks: the parser, then the filter. The
// filter decides through its `accept` parameter (false when it starts): an accepted packet
// leaves, unchanged, on the port it came in on (the model has no deparser); a rejected one,
// or one the parser rejects, is dropped.

#ifndef _EBPF_MODEL_P4_
#define _EBPF_MODEL_P4_

#include <core.p4>

// 32-bit counters addressed by a 32-bit index below max_index (an eBPF array or hash map);
// the control plane reads and resets them (counter_read / counter_reset in koi ctl).
extern CounterArray {
    CounterArray(bit<32> max_index, bool sparse);
    // Adds one to counter `index`.
    void increment(in bit<32> index);
    // Adds `value` to counter `index`.
    void add(in bit<32> index, in bit<32> value);
}

// Every table names one of these as its `implementation`: its size is the table's (an LPM
// table stays an LPM table).
extern array_table {
    array_table(bit<32> size);
}

extern hash_table {
    hash_table(bit<32> size);
}

parser parse<H>(packet_in packet, out H headers);
control filter<H>(inout H headers, out bool accept);

package ebpfFilter<H>(parse<H> prs,
                      filter<H> filt);

#endif
