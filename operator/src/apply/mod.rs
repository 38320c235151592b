//! Writing desired objects to the host: the plan of rendered (dynamic) objects, pure ([`plan`]),
//! carried out with server-side apply under an inventory with pruning ([`dynamic`]); the typed
//! host objects, written only where they drifted ([`typed`]); the control plane's teardown, the
//! apply in reverse ([`removal`], pure); and the operator's own recent writes, preferred to caches
//! that have not caught up with them ([`recent`]).

pub mod dynamic;
pub mod plan;
pub mod recent;
pub mod removal;
pub mod typed;
