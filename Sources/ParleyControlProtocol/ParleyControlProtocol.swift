// ParleyControlProtocol
