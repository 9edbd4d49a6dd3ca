//! memcached requests and replies as the load generator sends and reads them: the binary
//! protocol (24-byte headers, the request's number in `opaque`) and the ASCII protocol, each
//! over UDP (behind memcached's 8-byte frame header, whose request id also numbers the
//! request) or over TCP (a byte stream, replies in request order).

/// Which of memcached's protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    Binary,
    Ascii,
}

/// A request: read or write `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Get,
    Set,
}

/// Appends to `out` the request `op` on `key` (with `value` for a set), numbered `id`;
/// `udp`: behind the UDP frame header.
pub fn request(
    out: &mut Vec<u8>,
    protocol: Protocol,
    udp: bool,
    id: u32,
    op: Op,
    key: &[u8],
    value: &[u8],
) {
    if udp {
        out.extend_from_slice(&(id as u16).to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 1, 0, 0]);
    }
    match protocol {
        Protocol::Binary => {
            let (opcode, extras): (u8, &[u8]) = match op {
                Op::Get => (0x00, &[]),
                Op::Set => (0x01, &[0; 8]),
            };
            let value = if op == Op::Set { value } else { &[] };
            let body = extras.len() + key.len() + value.len();
            out.extend_from_slice(&[0x80, opcode]);
            out.extend_from_slice(&(key.len() as u16).to_be_bytes());
            out.extend_from_slice(&[extras.len() as u8, 0, 0, 0]);
            out.extend_from_slice(&(body as u32).to_be_bytes());
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&[0; 8]);
            out.extend_from_slice(extras);
            out.extend_from_slice(key);
            out.extend_from_slice(value);
        }
        Protocol::Ascii => match op {
            Op::Get => {
                out.extend_from_slice(b"get ");
                out.extend_from_slice(key);
                out.extend_from_slice(b"\r\n");
            }
            Op::Set => {
                out.extend_from_slice(b"set ");
                out.extend_from_slice(key);
                out.extend_from_slice(format!(" 0 0 {}\r\n", value.len()).as_bytes());
                out.extend_from_slice(value);
                out.extend_from_slice(b"\r\n");
            }
        },
    }
}

/// What a UDP reply datagram says: the request id of its frame header and whether it is a
/// complete, successful answer (a miss of a get counts as an answer).
pub fn udp_reply(d: &[u8], protocol: Protocol) -> Option<(u16, bool)> {
    let id = u16::from_be_bytes([*d.first()?, *d.get(1)?]);
    let body = d.get(8..)?;
    Some((id, answer_len(body, protocol).is_some()))
}

/// The length of the first complete answer at the start of `buf`, if there is one.
pub fn answer_len(buf: &[u8], protocol: Protocol) -> Option<usize> {
    match protocol {
        Protocol::Binary => {
            let h = buf.get(..24)?;
            if h[0] != 0x81 {
                return Some(24.min(buf.len()));
            }
            let body = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
            (buf.len() >= 24 + body).then_some(24 + body)
        }
        Protocol::Ascii => {
            // STORED / NOT_STORED / ERROR lines, or VALUE ... END.
            let line = buf.windows(2).position(|w| w == b"\r\n")? + 2;
            if !buf.starts_with(b"VALUE ") {
                return Some(line);
            }
            let end = buf.windows(5).position(|w| w == b"END\r\n")?;
            Some(end + 5)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_have_memcacheds_shapes() {
        let mut r = Vec::new();
        request(&mut r, Protocol::Binary, true, 7, Op::Set, b"key", b"vv");
        assert_eq!(&r[..8], &[0, 7, 0, 0, 0, 1, 0, 0]);
        assert_eq!(&r[8..12], &[0x80, 0x01, 0, 3]);
        assert_eq!(r[12], 8);
        assert_eq!(u32::from_be_bytes(r[16..20].try_into().unwrap()), 8 + 3 + 2);
        assert_eq!(r.len(), 8 + 24 + 13);
        r.clear();
        request(&mut r, Protocol::Ascii, false, 1, Op::Set, b"k", b"abc");
        assert_eq!(r, b"set k 0 0 3\r\nabc\r\n");
        let mut reply = vec![0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        reply.resize(24, 0);
        assert_eq!(answer_len(&reply, Protocol::Binary), None);
        reply.extend_from_slice(b"ab");
        assert_eq!(answer_len(&reply, Protocol::Binary), Some(26));
        assert_eq!(answer_len(b"STORED\r\n", Protocol::Ascii), Some(8));
        assert_eq!(answer_len(b"VALUE k 0 1\r\nx\r\n", Protocol::Ascii), None);
        assert_eq!(
            answer_len(b"VALUE k 0 1\r\nx\r\nEND\r\n", Protocol::Ascii),
            Some(21)
        );
        let mut d = vec![0, 9, 0, 0, 0, 1, 0, 0];
        d.extend_from_slice(b"END\r\n");
        assert_eq!(udp_reply(&d, Protocol::Ascii), Some((9, true)));
    }
}
