//! The portal's one stylesheet, inline in every page; the CSP allows it by its hash. Every
//! colour pair keeps at least 4.5:1 contrast, every state has a word beside its colour, and the
//! layout is one column below 40rem (phones, 390 px).

pub const STYLE: &str = "*{box-sizing:border-box}\
body{font-family:system-ui,sans-serif;margin:0;color:#111;background:#fff;line-height:1.5}\
header{background:#123;color:#fff;padding:.75rem 1rem;display:flex;justify-content:space-between;align-items:center;flex-wrap:wrap;gap:.5rem}\
header a,header button{color:#fff}header form{display:flex;gap:.5rem;align-items:center}header button{margin:0;background:#123;border-color:#fff}\
main{max-width:60rem;margin:auto;padding:1rem}h1{overflow-wrap:anywhere}\
section{margin-top:1.5rem}\
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.4rem;border-bottom:1px solid #ccc;vertical-align:top}\
caption{text-align:left;font-weight:600}.scroll{overflow-x:auto}\
.field{margin-top:.9rem}label{display:block;font-weight:600}\
input{font-size:1rem;padding:.35rem;width:100%;max-width:20rem;border:1px solid #555;display:block}\
.hint{display:block;color:#333;font-size:.9rem}\
.field-error{display:block;color:#a00;font-weight:600}input[aria-invalid=true]{border:2px solid #a00}\
.actions{margin-top:1.5rem}\
button,.button{font-size:1rem;padding:.45rem .9rem;background:#0b5;color:#000;border:2px solid #063;cursor:pointer;text-decoration:none;display:inline-block}\
button.danger{background:#b00020;color:#fff;border-color:#600}button.copy{padding:.1rem .5rem;font-size:.9rem;background:#eef;border-color:#335}\
a:focus,button:focus,input:focus,.scroll:focus{outline:3px solid #f90;outline-offset:2px}\
.error{color:#a00;font-weight:600}.muted{color:#444}\
.badge{display:inline-block;padding:0 .5rem;border-radius:.6rem;font-weight:700;border:1px solid currentColor}\
.phase-Ready{background:#d7f5df;color:#05421a}.phase-Pending{background:#eee;color:#333}\
.phase-Provisioning,.phase-Waking{background:#dde9ff;color:#0a3a80}.phase-Failed{background:#fde2e1;color:#8a0b05}\
.phase-Asleep{background:#e4e7ef;color:#283041}\
.phase-Deleting,.phase-Deleted{background:#fff1cc;color:#5c3f00}\
#phase{font-size:1.3rem}\
.checklist{list-style:none;padding:0;margin:0}.checklist li{padding:.4rem .6rem;border-left:.4rem solid #bbb;margin:.3rem 0;background:#f7f7f7}\
.checklist li.done{border-color:#0a7a2f}.checklist li.blocking{border-color:#b00020;background:#fff0f0}\
.state{font-weight:700;margin-right:.5rem}.checklist .reason{margin-left:.5rem;color:#333}\
.checklist .message{display:block;overflow-wrap:anywhere}\
.teardown{border:2px solid #5c3f00;background:#fff8e6;padding:.5rem .8rem}\
meter{width:100%;max-width:14rem;height:1rem;display:block}\
.cmd{display:flex;gap:.5rem;align-items:center;flex-wrap:wrap;margin:.3rem 0}\
code{background:#f1f1f1;padding:.1rem .3rem;overflow-wrap:anywhere}\
.events li{margin:.3rem 0}.events time{color:#333;margin-right:.5rem}\
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dl.facts dd{margin:0;overflow-wrap:anywhere}\
@media(max-width:40rem){main{padding:.6rem}dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.4rem}}";
