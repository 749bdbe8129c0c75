import { PageHeader } from '../components/States';

export default function Storages() {
  return <PageHeader title="Storages" />;
}
