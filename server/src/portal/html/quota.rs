//! The tenant page's budget: `status.quota` used of hard as one `<meter>` per key, with the
//! figures as text beside it; and, apart, what the control plane itself takes
//! (`status.controlPlane.footprint`) with its chart and Kubernetes versions. The page's script
//! rebuilds the same markup from the stream's view.

use super::{esc, hidden};
use crate::tenant_view::{Bar, TenantView};

/// One quota row; a key whose hard limit is zero (nothing allowed) has no meter.
fn row(b: &Bar) -> String {
    let meter = if b.hard_value > 0.0 {
        format!(
            "<meter min=\"0\" max=\"{}\" value=\"{}\" aria-label=\"{} used\"></meter>",
            b.hard_value,
            b.used_value,
            esc(&b.label)
        )
    } else {
        String::new()
    };
    let none = if b.hard_value > 0.0 {
        ""
    } else {
        " (none allowed)"
    };
    format!(
        "<tr data-key=\"{}\" data-used=\"{}\" data-hard=\"{}\"><th scope=\"row\">{}</th><td>{meter}<span class=\"figure\">{} of {}{none}</span></td></tr>",
        esc(&b.key),
        esc(&b.used),
        esc(&b.hard),
        esc(&b.label),
        esc(&b.used),
        esc(&b.hard),
    )
}

/// The quota section.
pub fn quota(view: &TenantView) -> String {
    let rows: String = view.quota.iter().map(row).collect();
    format!(
        "<section aria-labelledby=\"quota-h\"><h2 id=\"quota-h\">Quota</h2>\
<p class=\"muted\">Used of the tenant namespace's quota, as the host counts it. The figures include the control plane's own share, shown below.</p>\
<p id=\"quota-empty\"{}>The host has not counted this tenant's usage yet.</p>\
<div class=\"scroll\" id=\"quota-region\" role=\"region\" aria-label=\"Quota used\" tabindex=\"0\"{}><table id=\"quota\"><thead><tr><th scope=\"col\">Resource</th><th scope=\"col\">Used of the limit</th></tr></thead>\
<tbody id=\"quota-rows\">{rows}</tbody></table></div></section>",
        hidden(!view.quota.is_empty()),
        hidden(view.quota.is_empty()),
    )
}

/// The control plane section: its footprint and versions.
pub fn control_plane(view: &TenantView) -> String {
    let footprint: String = view
        .footprint
        .iter()
        .map(|s| {
            format!(
                "<dt>{}</dt><dd data-key=\"{}\">{}</dd>",
                esc(&s.label),
                esc(&s.key),
                esc(&s.amount)
            )
        })
        .collect();
    let or_none = |s: &str| {
        if s.is_empty() {
            "not known yet".to_owned()
        } else {
            esc(s)
        }
    };
    format!(
        "<section aria-labelledby=\"cp-h\"><h2 id=\"cp-h\">Control plane</h2>\
<p class=\"muted\">What the tenant's own control plane takes from the namespace, on top of your budget (not paid from it):</p>\
<dl class=\"facts\" id=\"footprint\">{footprint}</dl>\
<dl class=\"facts\"><dt>vCluster chart</dt><dd id=\"chart-version\">{}</dd><dt>Kubernetes</dt><dd id=\"kubernetes-version\">{}</dd></dl></section>",
        or_none(&view.chart_version),
        or_none(&view.kubernetes_version),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant_view::quota_label;

    fn bar(key: &str, used: &str, hard: &str, u: f64, h: f64) -> Bar {
        Bar {
            key: key.into(),
            label: quota_label(key),
            used: used.into(),
            hard: hard.into(),
            used_value: u,
            hard_value: h,
        }
    }

    #[test]
    fn each_quota_key_is_a_meter_with_its_figures() {
        let cpu = row(&bar("requests.cpu", "1500m", "3", 1.5, 3.0));
        assert_eq!(
            cpu,
            "<tr data-key=\"requests.cpu\" data-used=\"1500m\" data-hard=\"3\"><th scope=\"row\">CPU requests</th><td>\
<meter min=\"0\" max=\"3\" value=\"1.5\" aria-label=\"CPU requests used\"></meter><span class=\"figure\">1500m of 3</span></td></tr>"
        );
        let memory = row(&bar("requests.memory", "0", "5Gi", 0.0, 5368709120.0));
        assert!(
            memory.contains("max=\"5368709120\" value=\"0\""),
            "{memory}"
        );
        let none = row(&bar("services.nodeports", "0", "0", 0.0, 0.0));
        assert!(
            !none.contains("<meter") && none.contains("0 of 0 (none allowed)"),
            "{none}"
        );
    }
}
