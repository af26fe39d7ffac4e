// ParleyStore
