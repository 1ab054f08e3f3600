pub mod compare;
pub mod convert;
pub mod eval;
pub mod init;
pub mod merge;
pub mod report;
pub mod schema;
pub mod validate;
