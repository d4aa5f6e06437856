"""ResourceClaim, ResourceClaimTemplate and DeviceClass rules, with the claim spec they share."""
