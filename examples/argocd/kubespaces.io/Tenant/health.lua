-- Argo CD health check for kubespaces.io/Tenant (resource_customizations layout). Uses only the
-- base language and the base and table libraries: it runs from argocd-cm without useOpenLibs.
local hs = {}

local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

-- A condition's message (it names the object and the cause), or its reason when it has none.
local function describe(c)
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return c.reason
end

if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "the tenant is being deleted"
  local blocked = condition("DeletionBlocked")
  if blocked ~= nil and blocked.status == "True" then
    hs.message = describe(blocked)
  end
  return hs
end

local synced = condition("Synced")
local ready = condition("Ready")
local stalled = condition("Stalled")
local generation = obj.metadata.generation

if synced == nil or ready == nil then
  hs.status = "Progressing"
  hs.message = "waiting for the operator's first reconcile"
  return hs
end
if synced.status == "False" and synced.reason == "ReconcilePaused" then
  hs.status = "Suspended"
  hs.message = describe(synced)
  return hs
end
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end
if synced.observedGeneration ~= generation then
  hs.status = "Progressing"
  hs.message = "waiting for the operator to observe generation " .. tostring(generation)
  return hs
end
if ready.status == "True" and ready.observedGeneration == generation then
  hs.status = "Healthy"
  hs.message = ready.message
  return hs
end
hs.status = "Progressing"
if synced.status == "False" then
  hs.message = describe(synced)
else
  hs.message = describe(ready)
end
return hs
