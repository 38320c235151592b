//! Writing desired objects to the host: server-side apply of rendered (dynamic) objects under an
//! inventory with pruning ([`dynamic`]), and the operator's own recent writes, preferred to
//! caches that have not caught up with them ([`recent`]).

pub mod dynamic;
pub mod recent;
