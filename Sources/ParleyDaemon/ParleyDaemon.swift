// ParleyDaemon
