//! Tokens of P4-16 (to be written).
