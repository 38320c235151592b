//! Unguessable tokens: portal session ids, login state and nonce, CSRF tokens.

use base64::Engine;

/// 256 random bits, URL-safe.
pub fn token() -> String {
    let mut bytes = [0u8; 32];
    // The OS random source; without one no secure session can be made, so fail loudly.
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("no OS random numbers for session ids: {e}");
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
