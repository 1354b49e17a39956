export * from './masking';
export * from './secret-cipher';
export * from './secrets.errors';
export * from './secrets.module';
export * from './secrets.service';
export * from './secret.entity';
export * from './secret-policy';
