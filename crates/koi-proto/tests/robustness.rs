//! Text-format parsing of damaged input never panics: thousands of random byte-level mutations
//! of a valid P4Info either parse (and then print, re-parse and self-compare cleanly) or give
//! an error.

use koi_proto::{compare, p4info_from_text, p4info_to_text};

const SAMPLE: &str = r#"# proto-file: p4/config/v1/p4info.proto
# proto-message: p4.config.v1.P4Info

pkg_info {
  arch: "v1model"
}
tables {
  preamble {
    id: 33554433
    name: "ingress.t"
    alias: "t"
    annotations: "@my_anno(\"x\")"
  }
  match_fields {
    id: 1
    name: "hdr.ipv4.dstAddr"
    bitwidth: 32
    match_type: LPM
  }
  action_refs {
    id: 16777217
  }
  initial_default_action {
    action_id: 16777217
    arguments {
      param_id: 1
      value: "\000\001"
    }
  }
  size: 1024
}
actions {
  preamble {
    id: 16777217
    name: "ingress.a"
    alias: "a"
  }
  params {
    id: 1
    name: "port"
    bitwidth: 9
  }
}
registers {
  preamble {
    id: 369098753
    name: "ingress.r"
    alias: "r"
  }
  type_spec {
    tuple {
      members {
        bitstring {
          bit {
            bitwidth: 8
          }
        }
      }
    }
  }
  size: 8
}
type_info {
  new_types {
    key: "PortId_t"
    value {
      translated_type {
        uri: "p4.org/psa/v1/PortId_t"
        sdn_string {
        }
      }
    }
  }
}
"#;

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n as u64)).unwrap_or(0)
    }
}

#[test]
fn mutated_text_never_panics() {
    let original = p4info_from_text(SAMPLE).expect("sample parses");
    assert_eq!(
        p4info_from_text(&p4info_to_text(&original)).ok(),
        Some(original)
    );

    let alphabet = b"{}<>[]:\"'\\#\n 0123456789-.xe_aZ/\x00\xff";
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut parsed, mut rejected) = (0, 0);
    for _ in 0..3000 {
        let mut bytes = SAMPLE.as_bytes().to_vec();
        for _ in 0..=rng.below(4) {
            let at = rng.below(bytes.len());
            match rng.below(3) {
                0 => {
                    bytes.remove(at);
                }
                1 => bytes.insert(at, alphabet[rng.below(alphabet.len())]),
                _ => bytes[at] = alphabet[rng.below(alphabet.len())],
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        match p4info_from_text(&text) {
            Ok(p) => {
                parsed += 1;
                let again = p4info_from_text(&p4info_to_text(&p));
                assert_eq!(again.as_ref().ok(), Some(&p), "round trip of {text}");
                assert!(compare(&p, &p).is_empty());
            }
            Err(e) => {
                rejected += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    eprintln!("mutations: {parsed} parsed, {rejected} rejected");
    assert!(parsed > 0 && rejected > 0);
}
