import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { SecretEntity } from './secret.entity';
import { SealedSecret } from './secret-cipher';

@Injectable()
export class SecretsRepository {
  constructor(@InjectRepository(SecretEntity) private readonly rows: Repository<SecretEntity>) {}

  async listNames(environment: string): Promise<string[]> {
    const rows = await this.rows.find({
      where: { environment },
      select: { name: true },
      order: { name: 'ASC' },
    });
    return rows.map((r) => r.name);
  }

  find(environment: string, name: string): Promise<SecretEntity | null> {
    return this.rows.findOne({ where: { environment, name } });
  }

  findAll(environment: string): Promise<SecretEntity[]> {
    return this.rows.find({ where: { environment }, order: { name: 'ASC' } });
  }

  async upsert(environment: string, name: string, sealed: SealedSecret): Promise<void> {
    await this.rows.query(
      `INSERT INTO "tapyard"."secrets" (environment, name, key_id, nonce, ciphertext, auth_tag)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (environment, name) DO UPDATE
         SET key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce, ciphertext = EXCLUDED.ciphertext,
             auth_tag = EXCLUDED.auth_tag, updated_at = now()`,
      [environment, name, sealed.keyId, sealed.nonce, sealed.ciphertext, sealed.authTag],
    );
  }

  async delete(environment: string, name: string): Promise<boolean> {
    const res = await this.rows.delete({ environment, name });
    return (res.affected ?? 0) > 0;
  }
}
