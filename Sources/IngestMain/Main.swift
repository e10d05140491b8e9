import Ingest
import ServiceKit

@main struct Main: ServiceEntryPoint { typealias Service = IngestService }
