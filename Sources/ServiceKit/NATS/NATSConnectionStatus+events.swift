extension NATSConnectionStatus {
    /// The status after `event`: a disconnection means nats.c is reconnecting (it always retries
    /// here); a close is final; a draining connection stays draining until it closes.
    func after(_ event: NATSConnectionEvent) -> NATSConnectionStatus {
        switch (self, event) {
        case (.closed, _): .closed
        case (_, .closed): .closed
        case (.draining, _): .draining
        case (_, .connected), (_, .reconnected): .connected
        case (_, .disconnected): .reconnecting
        case (_, .error): self
        }
    }
}
