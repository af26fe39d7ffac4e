// ParleyDiscovery
