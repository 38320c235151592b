# Two KubeSpaces tenants, managed with Terraform or OpenTofu.
#
#   terraform apply     # waits until both tenants are Ready
#   terraform output -raw atlas_kubeconfig > atlas.kubeconfig
#   KUBECONFIG=atlas.kubeconfig kubectl get nodes
#
# See README.md for running it against a local build of the provider.

terraform {
  required_version = ">= 1.0"
  required_providers {
    kubespaces = {
      source = "kubespaces/kubespaces"
    }
  }
}

# The host cluster where the KubeSpaces operator runs. Leave both unset to use KUBECONFIG
# or ~/.kube/config; or set host/token/cluster_ca_certificate (KUBE_HOST, KUBE_TOKEN,
# KUBE_CLUSTER_CA_CERT_DATA) instead.
provider "kubespaces" {
  config_path    = var.kubeconfig
  config_context = var.context
}

resource "kubespaces_tenant" "atlas" {
  name   = "team-atlas"
  owner  = var.owner
  cpu    = "8"
  memory = "16Gi"

  storage = "50Gi"

  timeouts {
    create = "15m"
  }
}

resource "kubespaces_tenant" "borealis" {
  name   = "team-borealis"
  owner  = var.owner
  cpu    = "2"
  memory = "4Gi"

  # Keep the namespace and everything in it if the tenant is destroyed.
  deletion_policy = "Orphan"
}
