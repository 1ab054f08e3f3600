pub mod eval;
pub mod validate;
