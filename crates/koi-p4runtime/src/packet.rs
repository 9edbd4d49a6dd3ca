//! Packet I/O (spec "Packet I/O", "ControllerPacketMetadata"): the program's
//! `@controller_header("packet_in")` header at the front of a packet it sends to the CPU port
//! becomes `PacketIn` metadata, and `PacketOut` metadata becomes the
//! `@controller_header("packet_out")` header in front of the payload injected on the CPU port.
//!
//! A header's fields are packed in declaration order, big-endian, at their P4 widths (a
//! translated field's data-plane width, not P4Info's), padded to whole bytes at the end.
//! Metadata values are bytestrings of the P4Info width ([`crate::translate`] for translated
//! fields; a string no data-plane value was given for is refused). A `PacketOut` must carry
//! exactly one value per packet-out field (`INVALID_ARGUMENT` for a missing, repeated or
//! unknown one; `OUT_OF_RANGE` for a value too wide), and none when the program has no
//! packet-out header (the payload is then sent as is). A packet shorter than the packet-in
//! header is `INVALID_ARGUMENT`; without a packet-in header the whole packet is the payload.

use crate::error::{Result, internal, invalid};
use crate::schema::MetaField;
use crate::target::Target;
use koi_ir::Bits;
use koi_proto::p4runtime::{PacketIn, PacketMetadata, PacketOut};

fn header_bits(fields: &[MetaField]) -> usize {
    fields.iter().map(|f| f.codec.width as usize).sum()
}

/// Splits a packet the program sent to the CPU port into PacketIn metadata (from the
/// packet_in header at its front) and payload.
pub fn packet_in(t: &Target, bytes: &[u8]) -> Result<PacketIn> {
    let Some(fields) = &t.schema.packet_in else {
        return Ok(PacketIn {
            payload: bytes.to_vec(),
            metadata: Vec::new(),
        });
    };
    let len = header_bits(fields).div_ceil(8);
    if bytes.len() < len {
        return Err(invalid(format!(
            "a packet of {} bytes to the CPU port is shorter than the {len}-byte packet_in header",
            bytes.len()
        )));
    }
    let mut off = 0;
    let mut metadata = Vec::with_capacity(fields.len());
    for f in fields {
        let w = f.codec.width;
        let v = Bits::read_bits(bytes, off, w).map_err(|e| internal(e.to_string()))?;
        off += w as usize;
        metadata.push(PacketMetadata {
            metadata_id: f.id,
            value: f.codec.encode(&v, &t.strings),
        });
    }
    Ok(PacketIn {
        payload: bytes[len..].to_vec(),
        metadata,
    })
}

/// Builds the bytes to inject on the CPU port for a PacketOut: the packet_out header (from its
/// metadata) in front of the payload.
pub fn packet_out(t: &Target, p: &PacketOut) -> Result<Vec<u8>> {
    let Some(fields) = &t.schema.packet_out else {
        if let Some(m) = p.metadata.first() {
            return Err(invalid(format!(
                "the program has no packet_out header: metadata {} is not expected",
                m.metadata_id
            )));
        }
        return Ok(p.payload.clone());
    };
    let mut given: Vec<Option<&PacketMetadata>> = vec![None; fields.len()];
    for m in &p.metadata {
        let Some(i) = fields.iter().position(|f| f.id == m.metadata_id) else {
            return Err(invalid(format!(
                "packet_out has no metadata with id {}",
                m.metadata_id
            )));
        };
        if given[i].replace(m).is_some() {
            return Err(invalid(format!(
                "packet_out metadata {} is given twice",
                fields[i].name
            )));
        }
    }
    let len = header_bits(fields).div_ceil(8);
    let mut out = vec![0u8; len];
    let mut off = 0;
    for (f, m) in fields.iter().zip(given) {
        let Some(m) = m else {
            return Err(invalid(format!(
                "packet_out metadata {} is missing",
                f.name
            )));
        };
        let what = || format!("packet_out metadata {}", f.name);
        let v = f
            .codec
            .lookup(&m.value, &t.strings, &what)?
            .ok_or_else(|| invalid(format!("{}: no data-plane value for this string", what())))?;
        v.write_bits(&mut out, off)
            .map_err(|e| internal(e.to_string()))?;
        off += f.codec.width as usize;
    }
    out.extend_from_slice(&p.payload);
    Ok(out)
}
