import ParleyCore

/// Why a well-formed file offer is refused before the accept policy looks at it: the
/// protocol's limits, a hash list that is not the file's, a room the sender is not in (as
/// this node resolved it), or too many of the sender's offers already waiting for the
/// local user (docs/PROTOCOL.md "Files"). The text goes to the sender in `fileEnd`.
///
/// Pure: the driver reads what the store says (room membership, waiting offers); when the
/// store cannot tell, the driver refuses with its own reason (an unknown is never a yes).
public enum FileOfferRefusal {
    /// Offers from one peer waiting for the local user: more are refused, so a peer cannot
    /// fill the store with offers nobody answers.
    public static let maxWaitingOffersPerPeer = 64
    /// Offers waiting for the local user from everyone together above which a
    /// **stranger's** offer is refused (a correspondent's still waits, within its own
    /// share). The share above is per key and keys are free to mint: each waiting offer
    /// keeps up to 37 KiB (a 32 KiB thumbnail, a 4 KiB caption) until a person answers,
    /// even after its key is forgotten, so fresh keys could fill the disk down to the
    /// floor where correspondents' messages are refused too (the class of issue 29's M2,
    /// through offers). 256 offers: about 9 MiB, more than a person answers in a day.
    public static let maxWaitingOffersForStrangers = 256

    public static let notRoomMember = "not a member of that room"
    public static let tooManyWaiting = "too many of your offers wait for an answer"
    public static let tooManyWaitingInAll =
        "too many offers wait for an answer at the recipient (ask them to verify you or write to you)"

    /// `senderInRoom`: nil for an offer to this node alone, else whether this node is a
    /// joined member of the offer's room and the sender one of its members.
    /// `waitingOffers`: the sender's incoming offers still waiting for an answer here;
    /// `waitingInAll`: everyone's; `sender`: a stranger or a correspondent, as for the
    /// receive quota (`ReceiveQuota.Standing`).
    public static func reason(
        for offer: FileOffer, senderInRoom: Bool?, waitingOffers: Int, waitingInAll: Int,
        sender: ReceiveQuota.Standing
    ) -> String? {
        if let problem = FileOffer.limitViolation(size: offer.size, chunkSize: offer.chunkSize) { return problem }
        if let problem = offer.hashViolation { return problem }
        if senderInRoom == false { return notRoomMember }
        if waitingOffers >= maxWaitingOffersPerPeer { return tooManyWaiting }
        if sender == .stranger, waitingInAll >= maxWaitingOffersForStrangers { return tooManyWaitingInAll }
        return nil
    }
}
