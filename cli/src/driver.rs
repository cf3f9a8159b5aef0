//! Driver client: stub for now.
use crate::volume::{Credentials, Kind};
/// Mount arguments.
pub struct MountArgs {
    pub host: String,
    pub creds: Credentials,
    pub kind: Kind,
    pub hidden_creds: Option<Credentials>,
    pub letter: Option<char>,
    pub read_only: bool,
    pub shared: bool,
}
pub fn mount(_: &MountArgs) -> Result<String, String> {
    Err("needs Windows".into())
}
pub fn dismount(_: &str, _: bool) -> Result<String, String> {
    Err("needs Windows".into())
}
pub fn list() -> Result<String, String> {
    Err("needs Windows".into())
}
pub fn status(_: &str) -> Result<String, String> {
    Err("needs Windows".into())
}
pub fn gates_get() -> Result<String, String> {
    Err("needs Windows".into())
}
pub fn gates_set(_: Option<u8>, _: Option<u8>) -> Result<String, String> {
    Err("needs Windows".into())
}
pub fn gates_reload() -> Result<String, String> {
    Err("needs Windows".into())
}
pub fn erase_keys() -> Result<String, String> {
    Err("needs Windows".into())
}
