//! pcap file ports (`pcap:IN,OUT`): packets are read from one pcap file (until its end) and the
//! packets sent to the port are written to another, for offline runs and tests. Either side may
//! be left empty (`pcap:,out.pcap` only writes, `pcap:in.pcap,` only reads).
//!
//! The input must be a classic pcap file of Ethernet frames (link type 1); another link type,
//! an empty file or a pcapng file is refused when the port is opened, saying which. The file
//! is read as a stream, never whole: a record is at most 8 MB (pcap-file's buffer) and a frame
//! larger than the port's snap length is dropped (`too_big`), one captured only in part
//! (its record shorter than the frame) is dropped as `truncated`.

use crate::{Batch, DEFAULT_SNAPLEN, PortError, Readiness, Result, Stats};
use pcap_file::DataLink;
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Opens the pcap file at `path` for reading: a classic pcap file of Ethernet frames.
pub fn open_reader(path: &Path) -> Result<PcapReader<BufReader<File>>> {
    let shown = path.display().to_string();
    let refuse = |why: String| PortError::Pcap(shown.clone(), why);
    let f = File::open(path).map_err(|e| PortError::Io(shown.clone(), e))?;
    let meta = f.metadata().map_err(|e| PortError::Io(shown.clone(), e))?;
    if meta.is_dir() {
        return Err(refuse("is a directory, not a pcap file".into()));
    }
    if meta.is_file() && meta.len() == 0 {
        return Err(refuse(
            "empty file: not a pcap file (no pcap header)".into(),
        ));
    }
    let mut head = [0u8; 4];
    let r = PcapReader::new(BufReader::new(f)).map_err(|e| {
        let magic = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .map(|()| u32::from_le_bytes(head));
        match magic {
            Ok(0x0a0d_0d0a) => refuse("a pcapng file: koi reads classic pcap files".into()),
            Err(_) => refuse(format!("shorter than a pcap header: not a pcap file ({e})")),
            Ok(_) => refuse(format!("not a pcap file: {e}")),
        }
    })?;
    let link = r.header().datalink;
    if link != DataLink::ETHERNET {
        return Err(refuse(format!(
            "link type {} ({link:?}): koi reads Ethernet (1) captures only",
            u32::from(link)
        )));
    }
    Ok(r)
}

/// A port backed by pcap files.
pub struct PcapPort {
    name: String,
    reader: Option<PcapReader<BufReader<File>>>,
    writer: Option<PcapWriter<SharedFile>>,
    out: Option<SharedFile>,
    snaplen: usize,
    stats: Stats,
}

impl std::fmt::Debug for PcapPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapPort")
            .field("name", &self.name)
            .finish()
    }
}

impl PcapPort {
    /// Opens `input` for reading and creates (truncates) `output` for writing.
    pub fn open(input: Option<&Path>, output: Option<&Path>) -> Result<PcapPort> {
        let name = format!(
            "pcap:{},{}",
            input.map(|p| p.display().to_string()).unwrap_or_default(),
            output.map(|p| p.display().to_string()).unwrap_or_default()
        );
        let io_err = |p: &Path, e| PortError::Io(p.display().to_string(), e);
        let pcap_err = |p: &Path, e: pcap_file::PcapError| {
            PortError::Pcap(p.display().to_string(), e.to_string())
        };
        let reader = match input {
            Some(p) => Some(open_reader(p)?),
            None => None,
        };
        let (writer, out) = match output {
            Some(p) => {
                let f = File::create(p).map_err(|e| io_err(p, e))?;
                let out = SharedFile(Arc::new(Mutex::new(BufWriter::new(f))));
                let w = PcapWriter::new(out.clone()).map_err(|e| pcap_err(p, e))?;
                (Some(w), Some(out))
            }
            None => (None, None),
        };
        Ok(PcapPort {
            name,
            reader,
            writer,
            out,
            snaplen: DEFAULT_SNAPLEN,
            stats: Stats::default(),
        })
    }

    /// True once every packet of the input file has been read (or there is none).
    pub fn at_eof(&self) -> bool {
        self.reader.is_none()
    }
}

impl crate::Port for PcapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv_batch(&mut self, out: &mut Batch) -> Result<usize> {
        out.clear();
        while !out.is_full() {
            let Some(r) = &mut self.reader else { break };
            match r.next_packet() {
                None => {
                    tracing::info!(port = %self.name, "end of input file");
                    self.reader = None;
                }
                Some(Err(e)) => {
                    tracing::warn!(port = %self.name, error = %e, "unreadable input; stopping it");
                    self.stats.drop_error += 1;
                    self.reader = None;
                }
                Some(Ok(p)) => {
                    if (p.orig_len as usize) > p.data.len() {
                        self.stats.drop_truncated += 1;
                    } else if p.data.len() > self.snaplen {
                        self.stats.drop_too_big += 1;
                    } else {
                        out.push(&p.data);
                        self.stats.rx(p.data.len());
                    }
                }
            }
        }
        Ok(out.len())
    }

    fn send(&mut self, pkt: &[u8]) -> Result<()> {
        if pkt.len() > self.snaplen {
            self.stats.drop_too_big += 1;
            return Err(PortError::TooBig(
                self.name.clone(),
                pkt.len(),
                self.snaplen,
            ));
        }
        let Some(w) = &mut self.writer else {
            // A port without an output file discards what it is sent, like an unplugged cable.
            self.stats.drop_link_down += 1;
            return Err(PortError::LinkDown(self.name.clone()));
        };
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        match w.write_packet(&PcapPacket::new(ts, pkt.len() as u32, pkt)) {
            Ok(_) => {
                self.stats.tx(pkt.len());
                Ok(())
            }
            Err(e) => {
                self.stats.drop_error += 1;
                Err(PortError::Pcap(self.name.clone(), e.to_string()))
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        if let Some(out) = &self.out {
            out.flush_now()
                .map_err(|e| PortError::Io(self.name.clone(), e))?;
        }
        Ok(())
    }

    fn stats(&self) -> Stats {
        self.stats
    }

    fn readiness(&self) -> Readiness {
        if self.reader.is_some() {
            Readiness::Always
        } else {
            Readiness::Idle
        }
    }
}

/// The output file, shared between the pcap writer (which owns its writer) and the port (which
/// flushes it on [`crate::Port::flush`]).
#[derive(Clone)]
struct SharedFile(Arc<Mutex<BufWriter<File>>>);

impl SharedFile {
    fn flush_now(&self) -> std::io::Result<()> {
        match self.0.lock() {
            Ok(mut f) => f.flush(),
            Err(p) => p.into_inner().flush(),
        }
    }
}

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.lock() {
            Ok(mut f) => f.write(buf),
            Err(p) => p.into_inner().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.flush_now()
    }
}

impl Drop for PcapPort {
    fn drop(&mut self) {
        if let Some(out) = &self.out
            && let Err(e) = out.flush_now()
        {
            tracing::warn!(port = %self.name, error = %e, "cannot flush the output file");
        }
    }
}
