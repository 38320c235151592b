//! Unguessable tokens: portal session ids, login state and nonce, CSRF tokens; the nonces and
//! the made-up key of sealed cookies.

use base64::Engine;

/// 256 random bits, URL-safe.
pub fn token() -> String {
    let mut bytes = [0u8; 32];
    fill(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `bytes`, filled from the OS random source.
pub fn fill(bytes: &mut [u8]) {
    // Without one no secure session can be made, so fail loudly.
    if let Err(e) = getrandom::fill(bytes) {
        panic!("no OS random numbers for the portal's sessions: {e}");
    }
}
