// SPDX-License-Identifier: Apache-2.0
//
// koi's core.p4: the P4-16 core library, built into the koi binary and used for
// `#include <core.p4>`. It declares what every P4-16 program may use whatever its
// architecture: the standard error codes, the packet_in/packet_out externs, verify(),
// NoAction, the standard match kinds and static_assert().
//
// The declarations are compatible with p4c's core.p4 of the same name (same names, type
// parameters, parameter names and directions, overloads, annotations and order), so that a
// program written for p4c compiles unchanged with koi. The comments describe what koi does.

#ifndef _CORE_P4_
#define _CORE_P4_

// ---------------------------------------------------------------------------------------------
// Errors. Programs may add members with their own `error { ... }` declarations; these come
// first, in this order.

error {
    NoError,              // Nothing went wrong (parser_error of a packet the parser accepted).
    PacketTooShort,       // extract/lookahead/advance needed more bits than the packet has left.
    NoMatch,              // A select expression matched none of its cases.
    StackOutOfBounds,     // Access past the end of a header stack, e.g. extract into a full `next`.
    HeaderTooShort,       // A variable-size extraction exceeds the varbit field's maximum width.
    ParserTimeout,        // The parser ran longer than the target allows.
    ParserInvalidArgument // A parser operation got a value koi cannot honour: as in BMv2, a
                          // varbit size or advance distance that is not a whole number of bytes.
}

// ---------------------------------------------------------------------------------------------
// The packet being parsed. A parser reads it through a cursor that starts at the first bit.
// When an operation fails, the parser stops, sets its error and goes to `reject`; what reject
// does to the packet is up to the architecture (v1model keeps processing it).

extern packet_in {
    // Copies the next bits of the packet into the fixed-size header `hdr`, marks it valid and
    // moves the cursor past them. Errors: PacketTooShort; StackOutOfBounds when `hdr` is
    // `stack.next` and the stack is full.
    void extract<T>(out T hdr);

    // For a header with exactly one varbit field: extracts the fixed fields plus
    // `variableFieldSizeInBits` bits into the varbit field, marks the header valid and moves
    // the cursor. Errors: PacketTooShort, HeaderTooShort (more bits than the field can hold),
    // StackOutOfBounds, ParserInvalidArgument (size not a multiple of 8).
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);

    // Returns the next bits of the packet as a value of the fixed-size type T without moving
    // the cursor; headers inside the result are valid. Error: PacketTooShort.
    T lookahead<T>();

    // Moves the cursor forward by `sizeInBits` without storing the bits. Errors:
    // PacketTooShort, ParserInvalidArgument (distance not a multiple of 8).
    void advance(in bit<32> sizeInBits);

    // Length of the whole packet in bytes, as it was received (not only the unparsed rest).
    bit<32> length();
}

// The packet being built by a deparser.
extern packet_out {
    // Appends `hdr` if it is a valid header; an invalid header adds nothing. A header stack,
    // header union or struct appends its valid headers in declaration (index) order.
    void emit<T>(in T hdr);
}

// Parser statement: when `check` is false, sets the parser error to `toSignal` and
// transitions to `reject`; when it is true, does nothing.
extern void verify(in bool check, in error toSignal);

// The action that does nothing: the usual default_action of a table.
@noWarn("unused")
action NoAction() {}

// ---------------------------------------------------------------------------------------------
// Match kinds of table keys. Architectures add more (v1model: range, optional, selector).

match_kind {
    exact,   // The key equals the entry's value.
    ternary, // The key equals the value on the bits set in the entry's mask.
    lpm      // Longest-prefix match: the longest matching prefix wins.
}

// ---------------------------------------------------------------------------------------------
// Compile-time assertions, evaluated by koi's compiler: when `check` is false, compilation
// fails with `message` (or a default message). They return true, so that they can initialise
// a constant, e.g. `const bool ok = static_assert(V1MODEL_VERSION >= 20200408, "too old");`.

extern bool static_assert(bool check, string message);

extern bool static_assert(bool check);

#endif // _CORE_P4_
