import Approvals
import ServiceKit

@main struct Main: ServiceEntryPoint { typealias Service = ApprovalsService }
