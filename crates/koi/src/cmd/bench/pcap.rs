//! `koi bench --pcap [PORT=]FILE...`: the packets of one or more pcap files, each with the
//! ingress port it arrives on. Several files are merged in the order of their packets'
//! timestamps (a stable merge: equal timestamps keep the order the files were given in), so
//! a generator can write the two directions of its connections to two files, one per port,
//! and have each reply follow its request.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// One `--pcap` argument: `FILE` (arriving on `default_port`) or `PORT=FILE`.
pub fn parse_arg(arg: &str, default_port: u64) -> Result<(u64, PathBuf), String> {
    if let Some((port, file)) = arg.split_once('=')
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
    {
        let port = port
            .parse()
            .map_err(|_| format!("--pcap {arg}: port {port} is out of range"))?;
        if file.is_empty() {
            return Err(format!("--pcap {arg}: no file after `=`"));
        }
        return Ok((port, PathBuf::from(file)));
    }
    Ok((default_port, PathBuf::from(arg)))
}

/// Every packet of the files, each with its port, merged by timestamp. A file without
/// packets, an unreadable record or a packet longer than `snaplen` (left out, with a
/// warning) are reported as the single-file reader always did.
pub fn load(files: &[(u64, PathBuf)], snaplen: usize) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let mut all: Vec<(Duration, usize, u64, Vec<u8>)> = Vec::new();
    for (k, (port, path)) in files.iter().enumerate() {
        let packets = read(path, snaplen)?;
        if packets.is_empty() {
            return Err(format!("{}: no packets", path.display()));
        }
        all.extend(packets.into_iter().map(|(ts, data)| (ts, k, *port, data)));
    }
    if files.len() > 1 {
        // Stable: equal timestamps keep file order, then each file's own order.
        all.sort_by_key(|&(ts, k, _, _)| (ts, k));
    }
    Ok(all
        .into_iter()
        .map(|(_, _, port, data)| (port, data))
        .collect())
}

/// The packets of one file with their timestamps.
fn read(path: &Path, snaplen: usize) -> Result<Vec<(Duration, Vec<u8>)>, String> {
    // Refuses what is not a classic Ethernet pcap file, saying which (empty, pcapng, link).
    let mut r = koi_ports::pcap::open_reader(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let (mut too_big, mut truncated) = (0u64, 0u64);
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| format!("{}: unreadable pcap records ({e})", path.display()))?;
        if (p.orig_len as usize) > p.data.len() {
            truncated += 1;
        } else if p.data.len() > snaplen {
            too_big += 1;
        } else {
            out.push((p.timestamp, p.data.into_owned()));
        }
    }
    if too_big > 0 {
        eprintln!(
            "koi: warning: {}: {too_big} packets longer than {snaplen} bytes left out",
            path.display()
        );
    }
    if truncated > 0 {
        eprintln!(
            "koi: warning: {}: {truncated} packets captured only in part (truncated) left out",
            path.display()
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::{PcapPacket, PcapWriter};

    fn write(path: &Path, packets: &[(u64, u8)]) {
        let f = std::fs::File::create(path).unwrap();
        let mut w = PcapWriter::new(f).unwrap();
        for &(us, byte) in packets {
            let data = [byte; 20];
            w.write_packet(&PcapPacket::new(Duration::from_micros(us), 20, &data))
                .unwrap();
        }
    }

    #[test]
    fn arguments_name_an_optional_port() {
        assert_eq!(
            parse_arg("a.pcap", 1).unwrap(),
            (1, PathBuf::from("a.pcap"))
        );
        assert_eq!(
            parse_arg("2=a.pcap", 1).unwrap(),
            (2, PathBuf::from("a.pcap"))
        );
        // Not a port: part of the file name.
        assert_eq!(
            parse_arg("x=a.pcap", 1).unwrap(),
            (1, PathBuf::from("x=a.pcap"))
        );
        assert!(parse_arg("2=", 1).is_err());
        assert!(parse_arg("99999999999999999999999=a", 1).is_err());
    }

    #[test]
    fn files_merge_by_timestamp_keeping_file_order_on_ties() {
        let dir = std::env::temp_dir().join(format!("koi-bench-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
        write(&a, &[(1, 0xa1), (3, 0xa3), (5, 0xa5)]);
        write(&b, &[(2, 0xb2), (3, 0xb3), (9, 0xb9)]);
        let got: Vec<(u64, u8)> = load(&[(1, a.clone()), (2, b.clone())], 2048)
            .unwrap()
            .into_iter()
            .map(|(port, d)| (port, d[0]))
            .collect();
        assert_eq!(
            got,
            [
                (1, 0xa1),
                (2, 0xb2),
                (1, 0xa3),
                (2, 0xb3),
                (1, 0xa5),
                (2, 0xb9)
            ]
        );
        // One file keeps its order whatever its timestamps.
        write(&a, &[(5, 1), (1, 2)]);
        let one: Vec<u8> = load(&[(7, a.clone())], 2048)
            .unwrap()
            .into_iter()
            .map(|(port, d)| {
                assert_eq!(port, 7);
                d[0]
            })
            .collect();
        assert_eq!(one, [1, 2]);
        // Packets over the snap length are left out.
        assert!(load(&[(1, b)], 10).unwrap_err().contains("no packets"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
