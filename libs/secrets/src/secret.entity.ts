import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** One encrypted secret of one environment. The plaintext JSON of its fields is never stored. */
@Entity({ name: 'secrets' })
export class SecretEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  @Column({ type: 'varchar', length: 40 })
  environment!: string;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @Column({ name: 'key_id', type: 'varchar', length: 16 })
  keyId!: string;

  @Column({ type: 'bytea' })
  nonce!: Buffer;

  @Column({ type: 'bytea' })
  ciphertext!: Buffer;

  @Column({ name: 'auth_tag', type: 'bytea' })
  authTag!: Buffer;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
