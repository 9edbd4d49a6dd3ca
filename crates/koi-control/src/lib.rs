//! koi's control plane front: the simple_switch_CLI (BMv2 runtime_CLI) command language that
//! `koi ctl`, `--entries` files and STF tests speak.
//!
//! [`command`] splits a command line into a typed [`command::Command`]; [`value`] turns the
//! CLI's number forms (decimal, `0x` hex, dotted IPv4, IPv6, MAC) and key forms (`v&&&m`,
//! `v/len`, `lo->hi`) into big-endian bytes of a given width. Executing commands against a
//! switch's runtime state happens where that state lives.

pub mod command;
pub mod value;
