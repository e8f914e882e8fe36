//! A dispatch's credential: 32 random bytes from the operating system, hex-encoded. The runner
//! makes one per dispatch and passes it in that dispatch's environment only
//! (`SPLICE_CREDENTIAL`); only its sha256 is stored (on the claim), since bead files and the
//! journal are readable by every agent and committed to git.

use std::fmt;
use std::io::Read;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The environment variable a dispatch's credential travels in.
pub const ENV: &str = "SPLICE_CREDENTIAL";

/// A fresh secret. `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential(String);

impl Credential {
    /// A new credential from `/dev/urandom`.
    pub fn new() -> Result<Credential> {
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| Error::io("/dev/urandom", e))?;
        Ok(Credential(hex(&bytes)))
    }

    /// The secret itself, for the dispatch's environment only.
    pub fn secret(&self) -> &str {
        &self.0
    }

    /// What is stored: the secret's sha256, hex-encoded.
    pub fn sha256(&self) -> String {
        sha256_hex(&self.0)
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(…)")
    }
}

/// The sha256 of `text`, hex-encoded.
pub fn sha256_hex(text: &str) -> String {
    sha256_hex_of(text.as_bytes())
}

/// The sha256 of `bytes`, hex-encoded (a plan file's hash, too).
pub fn sha256_hex_of(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_credential_is_new_and_only_its_hash_is_shown() {
        let (a, b) = (Credential::new().unwrap(), Credential::new().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.secret().len(), 64);
        assert_eq!(a.sha256(), sha256_hex(a.secret()));
        assert_ne!(a.sha256(), a.secret());
        assert!(!format!("{a:?}").contains(a.secret()));
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
