output "atlas_api_endpoint" {
  description = "Public URL of team-atlas's own Kubernetes API."
  value       = kubespaces_tenant.atlas.api_endpoint
}

output "atlas_kubeconfig" {
  description = "Kubeconfig for team-atlas (cluster-admin inside the tenant)."
  value       = kubespaces_tenant.atlas.kubeconfig
  sensitive   = true
}

output "borealis_api_endpoint" {
  description = "Public URL of team-borealis's own Kubernetes API."
  value       = kubespaces_tenant.borealis.api_endpoint
}

output "namespaces" {
  description = "Host namespaces of the tenants."
  value       = [kubespaces_tenant.atlas.namespace, kubespaces_tenant.borealis.namespace]
}
