//! Statements: the operations of parser states, basic blocks and actions.
//!
//! One statement type serves parsers, controls and actions so that the interpreter has one
//! `exec` and analyses one visitor; the verifier checks that context-specific statements
//! appear only where they may (`Extract`, `Lookahead`, `Advance`, `Verify` in parsers, `Emit`
//! in controls, no table application inside actions).
//!
//! Calls come in three forms, chosen for their consumers:
//! - [`Stmt::CallAction`] for a direct action call (kept rather than inlined so that traces
//!   and P4Info see the named action, as p4c does);
//! - [`Stmt::ExternCall`] for a method of an extern *instance* (`counter.count(i)`,
//!   `register.read(...)`): the instance is an [`ExternId`] whose kind the interpreter
//!   dispatches on, the method stays a name because the set of methods is open (PSA, PNA);
//! - [`Stmt::Builtin`] for the architecture's extern *functions* (`mark_to_drop`, `hash`,
//!   `clone`, ...): a closed enum with typed operands, so that the interpreter and the code
//!   generator get exhaustive matches and the verifier checks each operand's type.

use crate::expr::{Expr, HeaderRef, Place};
use crate::ids::{ActionId, DigestId, ExternId, FieldListId};
use crate::phv::StackId;

/// An argument of an extern method call, by direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    In(Expr),
    Out(Place),
    InOut(Place),
}

/// Hash and checksum algorithms of the supported architectures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashAlgo {
    Crc32,
    /// A CRC-32 whose parameters the control plane sets: the index of its calculation in
    /// [`crate::Pipeline::calculations`].
    Crc32Custom(u32),
    Crc16,
    /// A CRC-16 whose parameters the control plane sets (see [`HashAlgo::Crc32Custom`]).
    Crc16Custom(u32),
    Random,
    Identity,
    Csum16,
    Xor16,
    /// ubpf_model's `lookup3`.
    Lookup3,
    /// FNV-1a, 32 bits: koi's extension of v1model's `HashAlgorithm` (`fnv1a_32`).
    Fnv1a32,
    /// FNV-1a, 64 bits (`fnv1a_64`, koi's extension).
    Fnv1a64,
    /// FNV-1, 32 bits (`fnv1_32`, koi's extension).
    Fnv1_32,
    /// FNV-1, 64 bits (`fnv1_64`, koi's extension).
    Fnv1_64,
    /// The FNV hashes over bytes read as signed chars, as twemproxy computes them
    /// (`fnv1a_32_signed`, ..., koi's extension).
    Fnv1a32Signed,
    Fnv1a64Signed,
    Fnv1_32Signed,
    Fnv1_64Signed,
    /// Twemproxy's key hashes (libmemcached's hashkit: `hashkit_one_at_a_time`,
    /// `hashkit_md5`, `hashkit_hsieh`, `hashkit_murmur`, `hashkit_jenkins`, koi's extension).
    HashkitOneAtATime,
    HashkitMd5,
    HashkitHsieh,
    HashkitMurmur,
    HashkitJenkins,
}

impl HashAlgo {
    /// The calculation of a custom CRC (its index in [`crate::Pipeline::calculations`]).
    pub fn calculation(self) -> Option<u32> {
        match self {
            HashAlgo::Crc32Custom(c) | HashAlgo::Crc16Custom(c) => Some(c),
            _ => None,
        }
    }

    /// The algorithms whose computation is fixed (all but the custom CRCs).
    pub const FIXED: [HashAlgo; 20] = [
        HashAlgo::Crc32,
        HashAlgo::Crc16,
        HashAlgo::Random,
        HashAlgo::Identity,
        HashAlgo::Csum16,
        HashAlgo::Xor16,
        HashAlgo::Lookup3,
        HashAlgo::Fnv1a32,
        HashAlgo::Fnv1a64,
        HashAlgo::Fnv1_32,
        HashAlgo::Fnv1_64,
        HashAlgo::Fnv1a32Signed,
        HashAlgo::Fnv1a64Signed,
        HashAlgo::Fnv1_32Signed,
        HashAlgo::Fnv1_64Signed,
        HashAlgo::HashkitOneAtATime,
        HashAlgo::HashkitMd5,
        HashAlgo::HashkitHsieh,
        HashAlgo::HashkitMurmur,
        HashAlgo::HashkitJenkins,
    ];

    /// The fixed algorithm an architecture file's enum member `name` names (`None` for the
    /// custom CRCs, whose calculation the caller gives, and unknown names).
    pub fn fixed(name: &str) -> Option<HashAlgo> {
        HashAlgo::FIXED.into_iter().find(|a| a.name() == name)
    }

    /// The enum member's name in the architecture file.
    pub fn name(self) -> &'static str {
        match self {
            HashAlgo::Crc32 => "crc32",
            HashAlgo::Crc32Custom(_) => "crc32_custom",
            HashAlgo::Crc16 => "crc16",
            HashAlgo::Crc16Custom(_) => "crc16_custom",
            HashAlgo::Random => "random",
            HashAlgo::Identity => "identity",
            HashAlgo::Csum16 => "csum16",
            HashAlgo::Xor16 => "xor16",
            HashAlgo::Lookup3 => "lookup3",
            HashAlgo::Fnv1a32 => "fnv1a_32",
            HashAlgo::Fnv1a64 => "fnv1a_64",
            HashAlgo::Fnv1_32 => "fnv1_32",
            HashAlgo::Fnv1_64 => "fnv1_64",
            HashAlgo::Fnv1a32Signed => "fnv1a_32_signed",
            HashAlgo::Fnv1a64Signed => "fnv1a_64_signed",
            HashAlgo::Fnv1_32Signed => "fnv1_32_signed",
            HashAlgo::Fnv1_64Signed => "fnv1_64_signed",
            HashAlgo::HashkitOneAtATime => "hashkit_one_at_a_time",
            HashAlgo::HashkitMd5 => "hashkit_md5",
            HashAlgo::HashkitHsieh => "hashkit_hsieh",
            HashAlgo::HashkitMurmur => "hashkit_murmur",
            HashAlgo::HashkitJenkins => "hashkit_jenkins",
        }
    }
}

/// v1model's `CloneType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CloneKind {
    /// Ingress to egress.
    I2E,
    /// Egress to egress.
    E2E,
}

/// An extern function of the architecture. Data lists (`data`) are flattened to scalars in
/// order (a struct or header argument becomes its fields); varbits contribute their current
/// bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// v1model `mark_to_drop(standard_metadata)`, ubpf `mark_to_drop()`.
    MarkToDrop,
    /// ubpf `mark_to_pass()`.
    MarkToPass,
    /// `dst = base + hash(data) % max` (v1model; `max == 0` gives `base`); without `max`,
    /// `dst = hash(data)` truncated to `dst` (ubpf).
    Hash {
        dst: Place,
        algo: HashAlgo,
        base: Expr,
        data: Vec<Expr>,
        max: Option<Expr>,
    },
    /// `verify_checksum[_with_payload]`: sets `checksum_error` when `cond` holds and the
    /// checksum differs.
    VerifyChecksum {
        cond: Expr,
        data: Vec<Expr>,
        checksum: Expr,
        algo: HashAlgo,
        with_payload: bool,
    },
    /// `update_checksum[_with_payload]`.
    UpdateChecksum {
        cond: Expr,
        data: Vec<Expr>,
        checksum: Place,
        algo: HashAlgo,
        with_payload: bool,
    },
    /// `clone` / `clone_preserving_field_list`.
    Clone {
        kind: CloneKind,
        session: Expr,
        field_list: Option<FieldListId>,
    },
    /// `resubmit_preserving_field_list`.
    Resubmit {
        field_list: Option<FieldListId>,
    },
    /// `recirculate_preserving_field_list`.
    Recirculate {
        field_list: Option<FieldListId>,
    },
    /// `truncate(length)`, in bytes.
    Truncate {
        bytes: Expr,
    },
    /// `digest(receiver, data)`; `data` in the digest's field order.
    Digest {
        digest: DigestId,
        receiver: Expr,
        data: Vec<Expr>,
    },
    /// `random(out result, lo, hi)`.
    Random {
        dst: Place,
        lo: Expr,
        hi: Expr,
    },
    /// `log_msg(format, {args})`; `{}` in `format` are replaced in order.
    LogMsg {
        format: String,
        args: Vec<Expr>,
    },
    Assert {
        cond: Expr,
    },
    Assume {
        cond: Expr,
    },
    /// ubpf `ubpf_time_get_ns()`.
    TimestampNs {
        dst: Place,
    },
    /// ubpf `csum_replace2`/`csum_replace4` (RFC 1624 incremental update); `old` and `new`
    /// are 16 or 32 bits.
    CsumReplace {
        dst: Place,
        csum: Expr,
        old: Expr,
        new: Expr,
    },
    /// A call of the user's extern function `func` (an index into
    /// [`crate::Pipeline::natives`]), implemented in C (see [`crate::native`]).
    Native {
        func: u32,
        /// One per parameter, in order.
        args: Vec<NativeArg>,
        /// Where the result goes.
        ret: Option<Place>,
    },
}

/// The operands of one parameter of a [`Builtin::Native`] call, one per leaf of its
/// [`crate::native::CType`] (in [`crate::native::CType::leaves`] order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeArg {
    /// The leaves' values (`in`, `inout`; empty for `out`): a header's validity as
    /// `IsValid`.
    pub reads: Vec<Expr>,
    /// Where the leaves are written back (`out`, `inout`; empty for `in`): a header's
    /// validity as its validity slot, set through `setValid`/`setInvalid`.
    pub writes: Vec<Place>,
    /// The header of each validity leaf in `writes`, in order.
    pub headers: Vec<crate::HeaderId>,
}

/// An operand of a builtin: read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand<'a> {
    Read(&'a Expr),
    Write(&'a Place),
}

/// A statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt {
    /// `dst = value` (copy-in/copy-out of parameters is a list of these).
    Assign {
        dst: Place,
        value: Expr,
    },
    /// `h.setValid()`; on a union member, also invalidates the other members.
    SetValid(HeaderRef),
    /// `h.setInvalid()`.
    SetInvalid(HeaderRef),
    /// `dst = src` for whole headers: validity and all fields.
    CopyHeader {
        dst: HeaderRef,
        src: HeaderRef,
    },
    /// `stack.push_front(count)`.
    PushFront {
        stack: StackId,
        count: u32,
    },
    /// `stack.pop_front(count)`.
    PopFront {
        stack: StackId,
        count: u32,
    },
    /// `pkt.extract(h)` or, for a header with a varbit field, `pkt.extract(h, bits)`; marks
    /// the header valid (invalidating the other members of its union) and, for `Next`,
    /// advances the stack. Errors: `PacketTooShort`,
    /// `HeaderTooShort` (varbit size above its maximum), `StackOutOfBounds`.
    Extract {
        header: HeaderRef,
        varbit_bits: Option<Expr>,
    },
    /// `dst = pkt.lookahead<T>()` for a bits/bool `T` of `dst`'s width (a header `T` is
    /// lowered to a lookahead into a temporary and slices of it). Error: `PacketTooShort`.
    Lookahead {
        dst: Place,
    },
    /// `pkt.advance(bits)`. Error: `PacketTooShort`.
    Advance {
        bits: Expr,
    },
    /// `dst = pkt.length()` in bytes (`bit<32>`).
    PacketLength {
        dst: Place,
    },
    /// `verify(cond, error)`: rejects with the error's code when `cond` is false.
    Verify {
        cond: Expr,
        error: u32,
    },
    /// `pkt.emit(h)`: appends the header if it is valid.
    Emit(HeaderRef),
    /// A direct call of an action with its (directionless) arguments.
    CallAction {
        action: ActionId,
        args: Vec<Expr>,
    },
    /// `instance.method(args)`, storing a returned value in `result`.
    ExternCall {
        instance: ExternId,
        method: String,
        args: Vec<Arg>,
        result: Option<Place>,
    },
    Builtin(Builtin),
}

impl Stmt {
    pub fn assign(dst: Place, value: Expr) -> Stmt {
        Stmt::Assign { dst, value }
    }

    /// Calls `f` on every expression directly in the statement, including the index
    /// expressions of places and header references.
    pub fn for_each_expr(&self, f: &mut impl FnMut(&Expr)) {
        fn place(p: &Place, f: &mut impl FnMut(&Expr)) {
            if let Place::StackField { index, .. } = p {
                f(index)
            }
        }
        fn header(h: &HeaderRef, f: &mut impl FnMut(&Expr)) {
            if let HeaderRef::Index(_, i) = h {
                f(i)
            }
        }
        match self {
            Stmt::Assign { dst, value } => {
                place(dst, f);
                f(value)
            }
            Stmt::SetValid(h) | Stmt::SetInvalid(h) | Stmt::Emit(h) => header(h, f),
            Stmt::CopyHeader { dst, src } => {
                header(dst, f);
                header(src, f)
            }
            Stmt::PushFront { .. } | Stmt::PopFront { .. } => {}
            Stmt::Extract {
                header: h,
                varbit_bits,
            } => {
                header(h, f);
                varbit_bits.iter().for_each(&mut *f)
            }
            Stmt::Lookahead { dst } | Stmt::PacketLength { dst } => place(dst, f),
            Stmt::Advance { bits } => f(bits),
            Stmt::Verify { cond, .. } => f(cond),
            Stmt::CallAction { args, .. } => args.iter().for_each(f),
            Stmt::ExternCall { args, result, .. } => {
                for a in args {
                    match a {
                        Arg::In(e) => f(e),
                        Arg::Out(p) | Arg::InOut(p) => place(p, f),
                    }
                }
                result.iter().for_each(|p| place(p, f))
            }
            Stmt::Builtin(b) => b.for_each_operand(&mut |o| match o {
                Operand::Read(e) => f(e),
                Operand::Write(p) => place(p, f),
            }),
        }
    }
}

impl Builtin {
    /// Calls `f` on every operand: expressions read and places written, in order.
    pub fn for_each_operand<'a>(&'a self, f: &mut impl FnMut(Operand<'a>)) {
        use Builtin::*;
        use Operand::{Read, Write};
        match self {
            MarkToDrop | MarkToPass | Resubmit { .. } | Recirculate { .. } => {}
            Hash {
                dst,
                base,
                data,
                max,
                ..
            } => {
                f(Write(dst));
                f(Read(base));
                data.iter().for_each(|e| f(Read(e)));
                max.iter().for_each(|e| f(Read(e)))
            }
            VerifyChecksum {
                cond,
                data,
                checksum,
                ..
            } => {
                f(Read(cond));
                data.iter().for_each(|e| f(Read(e)));
                f(Read(checksum))
            }
            UpdateChecksum {
                cond,
                data,
                checksum,
                ..
            } => {
                f(Read(cond));
                data.iter().for_each(|e| f(Read(e)));
                f(Write(checksum))
            }
            Clone { session, .. } => f(Read(session)),
            Truncate { bytes } => f(Read(bytes)),
            Digest { receiver, data, .. } => {
                f(Read(receiver));
                data.iter().for_each(|e| f(Read(e)))
            }
            Random { dst, lo, hi } => {
                f(Write(dst));
                f(Read(lo));
                f(Read(hi))
            }
            LogMsg { args, .. } => args.iter().for_each(|e| f(Read(e))),
            Assert { cond } | Assume { cond } => f(Read(cond)),
            TimestampNs { dst } => f(Write(dst)),
            CsumReplace {
                dst,
                csum,
                old,
                new,
            } => {
                f(Write(dst));
                f(Read(csum));
                f(Read(old));
                f(Read(new))
            }
            Native { args, ret, .. } => {
                for a in args {
                    a.reads.iter().for_each(|e| f(Read(e)));
                }
                for a in args {
                    a.writes.iter().for_each(|p| f(Write(p)));
                }
                ret.iter().for_each(|p| f(Write(p)))
            }
        }
    }

    /// The function's name in the architecture file (for printing).
    pub fn name(&self) -> &'static str {
        use Builtin::*;
        match self {
            MarkToDrop => "mark_to_drop",
            MarkToPass => "mark_to_pass",
            Hash { .. } => "hash",
            VerifyChecksum {
                with_payload: false,
                ..
            } => "verify_checksum",
            VerifyChecksum { .. } => "verify_checksum_with_payload",
            UpdateChecksum {
                with_payload: false,
                ..
            } => "update_checksum",
            UpdateChecksum { .. } => "update_checksum_with_payload",
            Clone { .. } => "clone",
            Resubmit { .. } => "resubmit",
            Recirculate { .. } => "recirculate",
            Truncate { .. } => "truncate",
            Digest { .. } => "digest",
            Random { .. } => "random",
            LogMsg { .. } => "log_msg",
            Assert { .. } => "assert",
            Assume { .. } => "assume",
            TimestampNs { .. } => "ubpf_time_get_ns",
            CsumReplace { .. } => "csum_replace",
            Native { .. } => "extern function",
        }
    }
}
