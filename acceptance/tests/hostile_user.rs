//! The server's doors against users who take too much, against real Dex and the real cluster
//! (issue 19): the bounds a platform team sets on creating tenants (who may, how many, how
//! large, how often), the request rate per user and per address, the number of live streams per
//! user, and streams that end with the login they were opened with. Every refusal names the
//! limit and who can raise it. The server runs in the test process as the chart's
//! `kubespaces-server` ServiceAccount, each test with the limits it exercises.
//!
//! Each tenant created costs the cluster a control plane, so the tests create as few as they can:
//! a create that must get past a bound without needing the tenant asks for an impossible CPU
//! (`lots`), which only the CRD's validation refuses (422), after every bound has let it by.

#[path = "hostile_user/bounds.rs"]
mod bounds;
#[path = "hostile_user/common.rs"]
mod common;
#[path = "hostile_user/rates.rs"]
mod rates;
#[path = "hostile_user/streams.rs"]
mod streams;
