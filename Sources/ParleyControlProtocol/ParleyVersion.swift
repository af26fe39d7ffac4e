/// The version of parleyd and parley: one constant both print (`--version`,
/// `node.status`), so a mismatch between CLI and daemon is visible.
public enum ParleyVersion {
    public static let string = "0.1.0"
}
