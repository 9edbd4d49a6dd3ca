//! The text form of a compiled program (`koi ctl dump_flows`, `koi bench --dump-flows`).

use super::*;

/// One line per operation: `hit TABLE#ENTRY`, `count EXTERN[i]`, `out[BIT+:W] = EXPR`
/// (bit offsets in the output), `copy`, then each output (`output:PORT`) or drop in order.
impl std::fmt::Display for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for op in &self.state {
            match op {
                StateOp::TableHit(t, i) => writeln!(f, "hit {t}#{i}")?,
                StateOp::Count(c, n) => {
                    write!(f, "count {c}[")?;
                    self.show(*n, f)?;
                    writeln!(f, "]")?;
                }
                StateOp::DirectMeter(tb, i, t) => {
                    writeln!(f, "read{t} = execute {tb}#{i}'s meter")?
                }
                StateOp::Meter(m, n, t) => {
                    write!(f, "read{t} = execute {m}[")?;
                    self.show(*n, f)?;
                    writeln!(f, "]")?;
                }
                StateOp::RegRead(r, n, t) => {
                    write!(f, "read{t} = {r}[")?;
                    self.show(*n, f)?;
                    writeln!(f, "]")?;
                }
                StateOp::RegWrite(r, n, v) => {
                    write!(f, "{r}[")?;
                    self.show(*n, f)?;
                    write!(f, "] = ")?;
                    self.show(*v, f)?;
                    writeln!(f)?;
                }
                StateOp::Random { lo, hi, t } => {
                    write!(f, "read{t} = random(")?;
                    self.show(*lo, f)?;
                    write!(f, ", ")?;
                    self.show(*hi, f)?;
                    writeln!(f, ")")?;
                }
                StateOp::Digest {
                    name,
                    receiver,
                    fields,
                    ..
                } => {
                    write!(f, "digest {name} to ")?;
                    self.show(*receiver, f)?;
                    write!(f, ":")?;
                    for (field, n, _) in fields {
                        write!(f, " {field}=")?;
                        self.show(*n, f)?;
                    }
                    writeln!(f)?;
                }
                StateOp::Input { what, t } => match what {
                    Input::Now => writeln!(f, "read{t} = now (us)")?,
                    Input::Zero => writeln!(f, "read{t} = 0 (time queued)")?,
                    Input::Len => writeln!(f, "read{t} = packet length")?,
                },
                StateOp::Guard { n, test } => {
                    write!(f, "guard ")?;
                    self.show(*n, f)?;
                    match test {
                        Test::Truth(t) => writeln!(f, " is {t}")?,
                        Test::Cases { cases, default } => {
                            let way: Vec<String> = cases
                                .iter()
                                .filter(|(_, w)| *w)
                                .map(|(c, _)| format!("{c}"))
                                .collect();
                            let not: Vec<String> = cases
                                .iter()
                                .filter(|(_, w)| !*w)
                                .map(|(c, _)| format!("{c}"))
                                .collect();
                            match default {
                                false => writeln!(f, " in [{}]", way.join(", "))?,
                                true if way.is_empty() => {
                                    writeln!(f, " not in [{}]", not.join(", "))?
                                }
                                true => writeln!(
                                    f,
                                    " in [{}] or not in [{}]",
                                    way.join(", "),
                                    not.join(", ")
                                )?,
                            }
                        }
                    }
                }
            }
        }
        for r in &self.results {
            let (port, o) = match r {
                Res::Drop(why) => {
                    writeln!(f, "drop ({why:?})")?;
                    continue;
                }
                Res::Send(port, o) => (port, o),
            };
            match o.copy_input {
                true => writeln!(f, "out = pkt[0..{}]", o.prefix_bytes)?,
                false => writeln!(f, "out = {} header bytes", o.prefix_bytes)?,
            }
            for op in &o.out {
                match op {
                    OutOp::Copy { src, dst, len } => {
                        writeln!(f, "out[{dst}+:{len}] = pkt[{src}+:{len}]")?
                    }
                    OutOp::Const { dst, value } => {
                        writeln!(f, "out[{dst}+:{}] = {value}", value.width())?
                    }
                    OutOp::Bytes { dst, bytes } => {
                        write!(f, "out[{}+:{}] = 0x", dst * 8, bytes.len() * 8)?;
                        for b in bytes {
                            write!(f, "{b:02x}")?;
                        }
                        writeln!(f)?;
                    }
                    OutOp::Write { dst, n, .. } => {
                        write!(f, "out[{dst}+:{}] = ", self.widths[*n as usize])?;
                        self.show(*n, f)?;
                        writeln!(f)?;
                    }
                }
            }
            writeln!(f, "out += pkt[{}..]", o.payload_start)?;
            for n in &o.cut {
                write!(f, "truncate ")?;
                self.show(*n, f)?;
                writeln!(f)?;
            }
            writeln!(f, "output:{port}")?;
        }
        Ok(())
    }
}
