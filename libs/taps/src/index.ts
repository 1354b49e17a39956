export * from './tap.types';
export * from './dto/tap-config.dto';
export * from './taps.module';
export * from './taps.service';
export * from './taps.repository';
export * from './tap-runner.service';
export * from './ledger.service';
export * from './record-sinks';
