variable "kubeconfig" {
  description = "Kubeconfig of the host cluster; null means KUBECONFIG or ~/.kube/config."
  type        = string
  default     = null
}

variable "context" {
  description = "Context in that kubeconfig; null means its current context."
  type        = string
  default     = null
}

variable "owner" {
  description = "Email address that owns both tenants."
  type        = string
  default     = "alice@example.com"
}
