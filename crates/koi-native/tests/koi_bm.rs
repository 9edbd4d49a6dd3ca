//! koi's implementation of BMv2's extern API (`cxx/koi_bm.h`) checked on its own: a C++
//! program built with the system's C++ compiler compares `koi_bm::Int` with the compiler's
//! 128-bit integers on random operands, and `bm::Field` with P4's wrapping rules.

use std::path::Path;
use std::process::Command;

const CHECKS: &str = r#"
#include <koi_bm.h>
#include <cstdio>
#include <cstdlib>
#include <string>

typedef __int128 i128;
static int failures = 0;
#define CHECK(c) do { if (!(c)) { std::printf("FAIL line %d: %s\n", __LINE__, #c); failures++; } } while (0)

static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint64_t next() { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }

/* An Int from a 128-bit value, through bytes (two's complement, sign-extended). */
static koi_bm::Int of(i128 v) {
  unsigned char b[16];
  for (int i = 0; i < 16; i++) b[15 - i] = (unsigned char)((unsigned __int128)v >> (8 * i));
  koi_bm::Int r = koi_bm::Int::from_bytes(b, 16);
  if (v < 0) r = r - (koi_bm::Int(1) << 128);
  return r;
}

static std::string dec(i128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
  std::string s;
  while (u) { s.insert(s.begin(), (char)('0' + (int)(u % 10))); u /= 10; }
  return neg ? "-" + s : s;
}

int main() {
  for (int n = 0; n < 20000; n++) {
    int64_t a = (int64_t)next(), b = (int64_t)next();
    if (n % 3 == 0) b >>= (next() % 60);
    i128 x = a, y = b;
    koi_bm::Int A = of(x), B = of(y);
    CHECK((A + B) == of(x + y));
    CHECK((A - B) == of(x - y));
    CHECK((A * B) == of(x * y));
    if (y != 0) {
      CHECK((A / B) == of(x / y));
      CHECK((A % B) == of(x % y));
    }
    unsigned s = (unsigned)(next() % 60);
    CHECK((A << s) == of(x << s));
    CHECK((A >> s) == of(x >> s));
    CHECK((A & B) == of(x & y));
    CHECK((A | B) == of(x | y));
    CHECK((A ^ B) == of(x ^ y));
    CHECK((~A) == of(~x));
    CHECK((A < B) == (x < y));
    CHECK((A >= B) == (x >= y));
    CHECK(A.decimal() == dec(x));
    CHECK(A.sign() == (x < 0 ? -1 : (x > 0 ? 1 : 0)));
    CHECK(A.convert_to<uint64_t>() == (uint64_t)a);
  }
  /* Fields keep P4's ranges. */
  bm::Field u8f(8);
  u8f.set(300);
  CHECK(u8f.get_uint() == 44);
  u8f.set(-1);
  CHECK(u8f.get_uint() == 255);
  bm::Field s8(8, nullptr, true, true);
  s8.set(200);
  CHECK(s8.get_int() == -56);
  s8.set(-129);
  CHECK(s8.get_int() == 127);
  bm::Field sat(8, nullptr, true, true, false, false, true);
  sat.set(1000);
  CHECK(sat.get_int() == 127);
  bm::Field w(72);
  w.set(std::string("0x1ff0000000000000000"));  /* 73 bits: the top one is dropped */
  CHECK(w.get_bytes().to_hex() == "ff0000000000000000");
  bm::Data d;
  d.two_comp_mod(bm::Data(-129), bm::Data(8));
  CHECK(d.get_int() == 127);
  d.usat_cast(bm::Data(-5), bm::Data(8));
  CHECK(d.get_int() == 0);
  d.usat_cast(bm::Data(300), bm::Data(8));
  CHECK(d.get_int() == 255);
  d.sat_cast(bm::Data(-300), bm::Data(8));
  CHECK(d.get_int() == -128);
  d.set(std::string("-0x10"));
  CHECK(d.get_int() == -16 && d.get_string_repr() == "-16");
  d.set(std::string("0xabcd"));
  CHECK(d.get_string() == std::string("\xab\xcd"));
  CHECK(d % 16u == 13u);
  bool threw = false;
  try { d.divide(d, bm::Data(0)); } catch (const std::domain_error &) { threw = true; }
  CHECK(threw);
  std::printf("%d failures\n", failures);
  return failures != 0;
}
"#;

#[test]
fn koi_bm_integers_and_fields_match_p4_and_128_bit_arithmetic() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("checks.cpp");
    std::fs::write(&src, CHECKS).unwrap();
    let exe = dir.path().join("checks");
    let cxx = std::env::var("CXX")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "c++".into());
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("cxx");
    let out = Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(format!("-I{}", include.display()))
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("{cxx}: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{text}");
    assert!(text.contains("0 failures"), "{text}");
}
